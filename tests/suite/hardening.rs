//! The three programs are hardened as a distribution would ship them:
//! position-independent (so ASLR moves their own code), full RELRO (the
//! GOT is read-only after start-up: `PT_GNU_RELRO` plus `BIND_NOW`), and a
//! non-executable stack (`PT_GNU_STACK` without `PF_X`). cxlstat is meant
//! to carry `cap_perfmon`, which makes this matter.
//!
//! They also load no shared library but the C library (see
//! [`the_three_programs_load_only_the_c_library`]).
//!
//! The ELF headers are read with the `object` crate. The checker itself is
//! tested on a program built without any of the three (with gcc), so a
//! checker that accepted everything would fail here.

use crate::skip;

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader, SectionTable};
use object::{Endianness, FileKind};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a hardened executable must have; each field is true when present.
#[derive(Debug, PartialEq, Eq)]
struct Hardening {
    pie: bool,
    relro: bool,
    bind_now: bool,
    stack_not_executable: bool,
}

impl Hardening {
    const FULL: Hardening = Hardening {
        pie: true,
        relro: true,
        bind_now: true,
        stack_not_executable: true,
    };
}

/// Reads the ELF file at `path` and hands it to `elf64` or `elf32`.
fn with_elf<R>(path: &Path, elf64: fn(&[u8]) -> R, elf32: fn(&[u8]) -> R) -> R {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match FileKind::parse(&*data).expect("an object file") {
        FileKind::Elf64 => elf64(&data),
        FileKind::Elf32 => elf32(&data),
        other => panic!("{}: not ELF but {other:?}", path.display()),
    }
}

fn inspect(path: &Path) -> Hardening {
    with_elf(
        path,
        inspect_elf::<elf::FileHeader64<Endianness>>,
        inspect_elf::<elf::FileHeader32<Endianness>>,
    )
}

fn inspect_elf<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Hardening {
    let header = H::parse(data).expect("ELF header");
    let endian = header.endian().expect("ELF endianness");
    let segments = header
        .program_headers(endian, data)
        .expect("program headers");
    let mut found = Hardening {
        pie: false,
        relro: false,
        bind_now: false,
        stack_not_executable: false,
    };
    let mut has_interp = false;
    let mut pie_flag = false;
    for segment in segments {
        match segment.p_type(endian) {
            elf::PT_INTERP => has_interp = true,
            elf::PT_GNU_RELRO => found.relro = true,
            elf::PT_GNU_STACK => {
                found.stack_not_executable = segment.p_flags(endian) & elf::PF_X == 0
            }
            _ => {}
        }
        let Some(dynamic) = segment.dynamic(endian, data).expect("dynamic section") else {
            continue;
        };
        for entry in dynamic {
            let value = entry.d_val(endian).into();
            let tag: i64 = entry.d_tag(endian).into();
            match tag {
                elf::DT_BIND_NOW => found.bind_now = true,
                elf::DT_FLAGS if value & u64::from(elf::DF_BIND_NOW) != 0 => found.bind_now = true,
                elf::DT_FLAGS_1 => {
                    found.bind_now |= value & u64::from(elf::DF_1_NOW) != 0;
                    pie_flag = value & u64::from(elf::DF_1_PIE) != 0;
                }
                _ => {}
            }
        }
    }
    // ET_DYN is both a shared library and a PIE; an executable one has an
    // interpreter (dynamic PIE) or says DF_1_PIE (static PIE).
    found.pie = header.e_type(endian) == elf::ET_DYN && (has_interp || pie_flag);
    found
}

/// The programs this test build made, or those in `HWSTAT_PROGRAMS_DIR`:
/// `.ci/run` points it at `target/release`, the build users run, since
/// the README's `cargo test` builds the debug programs (linked with the
/// same settings: Cargo's profiles do not change them).
pub fn programs() -> Vec<PathBuf> {
    match std::env::var_os("HWSTAT_PROGRAMS_DIR") {
        Some(dir) => ["iostat-rs", "vcpustat", "cxlstat"]
            .iter()
            .map(|name| Path::new(&dir).join(name))
            .collect(),
        None => [
            env!("CARGO_BIN_EXE_iostat-rs"),
            env!("CARGO_BIN_EXE_vcpustat"),
            env!("CARGO_BIN_EXE_cxlstat"),
        ]
        .iter()
        .map(PathBuf::from)
        .collect(),
    }
}

#[test]
fn the_three_programs_are_pie_with_full_relro_and_a_non_executable_stack() {
    for program in &programs() {
        assert_eq!(inspect(program), Hardening::FULL, "{}", program.display());
    }
}

/// The byte order and the section table of the ELF file in `data`.
fn sections_of<H: FileHeader<Endian = Endianness>>(
    data: &[u8],
) -> (Endianness, SectionTable<'_, H>) {
    let header = H::parse(data).expect("ELF header");
    let endian = header.endian().expect("ELF endianness");
    (
        endian,
        header.sections(endian, data).expect("section headers"),
    )
}

/// The shared libraries `path` names in `DT_NEEDED`.
fn needed(path: &Path) -> Vec<String> {
    with_elf(
        path,
        needed_elf::<elf::FileHeader64<Endianness>>,
        needed_elf::<elf::FileHeader32<Endianness>>,
    )
}

fn needed_elf<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Vec<String> {
    let (endian, sections) = sections_of::<H>(data);
    let Some((entries, strings_index)) = sections.dynamic(endian, data).expect("dynamic section")
    else {
        return Vec::new();
    };
    let strings = sections
        .strings(endian, data, strings_index)
        .expect("dynamic string table");
    entries
        .iter()
        .filter(|entry| {
            let tag: i64 = entry.d_tag(endian).into();
            tag == elf::DT_NEEDED
        })
        .map(|entry| {
            let name = entry.string(endian, strings).expect("DT_NEEDED name");
            String::from_utf8_lossy(name).into_owned()
        })
        .collect()
}

/// The libraries `path` imports symbols from: the files of its version
/// needs (`.gnu.version_r`). glibc versions every symbol its libraries
/// export, so a glibc library missing here gives the program nothing.
fn imported_from(path: &Path) -> Vec<String> {
    with_elf(
        path,
        imported_from_elf::<elf::FileHeader64<Endianness>>,
        imported_from_elf::<elf::FileHeader32<Endianness>>,
    )
}

fn imported_from_elf<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Vec<String> {
    let (endian, sections) = sections_of::<H>(data);
    let Some((needs, strings_index)) = sections.gnu_verneed(endian, data).expect("version needs")
    else {
        return Vec::new();
    };
    let strings = sections
        .strings(endian, data, strings_index)
        .expect("version needs' string table");
    needs
        .map(|need| {
            let (need, _) = need.expect("version need");
            let file = need.file(endian, strings).expect("version need's file");
            String::from_utf8_lossy(file).into_owned()
        })
        .collect()
}

/// Whether LLD linked `path`: it says so in `.comment` ("Linker: LLD
/// 22.1.2 ..."), where GNU ld writes nothing of its own.
fn linked_by_lld(path: &Path) -> bool {
    with_elf(
        path,
        linked_by_lld_elf::<elf::FileHeader64<Endianness>>,
        linked_by_lld_elf::<elf::FileHeader32<Endianness>>,
    )
}

fn linked_by_lld_elf<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> bool {
    let (endian, sections) = sections_of::<H>(data);
    let Some((_, comment)) = sections.section_by_name(endian, b".comment") else {
        return false;
    };
    let text = comment.data(endian, data).expect(".comment");
    text.split(|&b| b == 0)
        .any(|s| s.starts_with(b"Linker: LLD"))
}

/// Each shared library costs every run its loading and constructors: on the
/// VM of BENCHMARKS.md ("Start-up"), `libgcc_s.so.1` 0.13 ms and
/// `libm.so.6` 0.08 ms of a 1 ms `iostat-rs -x`. build.rs links the
/// unwinder statically and the charts' axes need no `libm`, so the C
/// library is all the programs load; a dependency that brings one back
/// fails here.
///
/// Linked by GNU ld (Rust before 1.90, or a configured linker), the debug
/// and release builds also list `libm.so.6`: GNU ld's `--as-needed` keeps
/// a library for a reference from code that `--gc-sections` then removes
/// (plotters' `log10`), where LLD decides after the removal. The `dist`
/// build, whose LTO drops that code first, does not. So without LLD the
/// test still fails on a library the programs import a symbol from, and
/// says which ones they list for nothing.
#[test]
fn the_three_programs_load_only_the_c_library() {
    // glibc's dynamic loader (named per architecture) may be listed too:
    // it is mapped in any case, so it costs nothing more.
    let glibc =
        |name: &str| name == "libc.so.6" || name.starts_with("ld-linux") || name == "ld64.so.2";
    for program in &programs() {
        let libraries = needed(program);
        assert!(
            libraries.iter().any(|l| l == "libc.so.6"),
            "{} loads {libraries:?}",
            program.display()
        );
        let others: Vec<&String> = libraries.iter().filter(|l| !glibc(l)).collect();
        if others.is_empty() {
            continue;
        }
        assert!(
            !linked_by_lld(program),
            "{} loads {libraries:?}",
            program.display()
        );
        let imported = imported_from(program);
        assert!(
            others.iter().all(|l| !imported.contains(l)),
            "{} loads {others:?} and imports symbols from {imported:?}",
            program.display()
        );
        let _ = writeln!(
            std::io::stderr(),
            "NOTE {}: linked without LLD, lists {others:?} for code the link removed; \
             nothing is imported from them (cargo build --profile dist does not list them)",
            program.display()
        );
    }
}

#[test]
fn the_checker_sees_a_program_built_without_hardening() {
    let dir = crate::scratch::scratch("hardening");
    let source = dir.join("plain.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").unwrap();
    let built = |name: &str, flags: &[&str]| {
        let out = dir.join(name);
        let status = Command::new("cc")
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .status();
        match status {
            Ok(s) if s.success() => Some(out),
            _ => None,
        }
    };
    let Some(weak) = built("weak", &["-no-pie", "-Wl,-z,norelro,-z,lazy,-z,execstack"]) else {
        skip::skip(
            "the_checker_sees_a_program_built_without_hardening",
            "no C compiler (cc) to build the counter-example: apt-get install gcc",
        );
        return;
    };
    let strong = built(
        "strong",
        &["-pie", "-fPIE", "-Wl,-z,relro,-z,now,-z,noexecstack"],
    )
    .unwrap();
    let weak_seen = inspect(&weak);
    let strong_seen = inspect(&strong);
    assert_eq!(
        weak_seen,
        Hardening {
            pie: false,
            relro: false,
            bind_now: false,
            stack_not_executable: false,
        }
    );
    assert_eq!(strong_seen, Hardening::FULL);
}

/// [`imported_from`] tells a library a program takes symbols from from one
/// it only lists: two programs built with gcc, both listing `libm.so.6`,
/// one calling `cos` and one not. [`linked_by_lld`] tells GNU ld's
/// programs (gcc's) from LLD's (this build's, when build.rs gave LLD the
/// hot-function list, which it does only for LLD).
#[test]
fn the_import_and_linker_checkers_tell_the_cases_apart() {
    let dir = crate::scratch::scratch("imports");
    let built = |name: &str, body: &str| {
        let source = dir.join(format!("{name}.c"));
        std::fs::write(&source, format!("#include <math.h>\n{body}\n")).unwrap();
        let out = dir.join(name);
        let status = Command::new("cc")
            .arg("-o")
            .arg(&out)
            .arg(&source)
            .args(["-Wl,--no-as-needed", "-lm"])
            .status();
        matches!(status, Ok(s) if s.success()).then_some(out)
    };
    let Some(uses) = built("uses", "int main(int c, char **v) { return (int)cos(c); }") else {
        skip::skip(
            "the_import_and_linker_checkers_tell_the_cases_apart",
            "no C compiler (cc) with libm to build the examples: apt-get install gcc",
        );
        return;
    };
    let lists = built("lists", "int main(void) { return 0; }").unwrap();
    let seen = |program: &Path| (needed(program), imported_from(program));
    let (uses_needed, uses_imported) = seen(&uses);
    let (lists_needed, lists_imported) = seen(&lists);
    let uses_by_lld = linked_by_lld(&uses);
    let libm = "libm.so.6".to_string();
    assert!(uses_needed.contains(&libm) && lists_needed.contains(&libm));
    assert!(uses_imported.contains(&libm), "{uses_imported:?}");
    assert!(!lists_imported.contains(&libm), "{lists_imported:?}");
    assert!(lists_imported.contains(&"libc.so.6".to_string()));
    assert!(!uses_by_lld, "gcc's program read as linked by LLD");
    if option_env!("HWSTAT_HOT_FUNCTIONS_FIRST").is_some() {
        let ours = Path::new(env!("CARGO_BIN_EXE_iostat-rs"));
        assert!(linked_by_lld(ours), "{}", ours.display());
    }
}
