//! The programs keep the code usual runs execute together at the start of
//! their text (build.rs hands `link/hot-functions.txt` to the linker), so
//! the kernel's fault-around maps little of the rest.
//!
//! The checks: every build places the listed functions it has first, in
//! the list's order (the linker took the list); the sections every run
//! reads are together (`link/sections.ld`) and the relative relocations
//! packed (build.rs says when each applies); and the shipped (`dist`)
//! iostat-rs, during the main job's interval runs (`-x` and `-x -p ALL`,
//! on this machine's devices and on 1,000 made-up ones), keeps no more of
//! its text resident than three 64 kB windows, and no more of its
//! read-only segment than the first 64 kB. That last check fails when the lists have gone stale: a new
//! toolchain, or any change to the dependencies or the version in
//! Cargo.toml, renames every function (the symbol hashes change), and new
//! code is not listed yet. Then run `link/profile.sh` again. Unordered,
//! 87 to 99 % of the text was resident (BENCHMARKS.md, "Hot code first");
//! without `link/hot-rodata.txt`, 128 to 256 kB of the read-only segment
//! (BENCHMARKS.md, "Read-only data a run reads, first").

use crate::hardening::programs;
use crate::{namespace, skip};

use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const HOT_FUNCTIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-functions.txt");

/// The function names of `link/hot-functions.txt`, in order.
fn hot_functions() -> Vec<String> {
    std::fs::read_to_string(HOT_FUNCTIONS)
        .expect("link/hot-functions.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What `look` finds in the ELF file `program`, read and parsed.
fn in_elf<T>(program: &Path, look: impl FnOnce(&ElfFile64<Endianness>) -> T) -> T {
    let data = std::fs::read(program).unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    look(&ElfFile64::<Endianness>::parse(&*data).expect("a 64-bit ELF program"))
}

/// A program's functions: where `.text.hot` (where `link/sections.ld`
/// puts the listed functions, the main job's; the others follow in
/// `.text.warm`) and `.text` start, and the address of each named
/// function in any of the three.
struct Code {
    hot_start: Option<u64>,
    text_start: u64,
    symbols: std::collections::HashMap<String, u64>,
}

/// The functions of the ELF file `program`, read and parsed.
fn code(program: &Path) -> Code {
    in_elf(program, |elf| {
        let text = elf.section_by_name(".text").expect("a .text section");
        let hot = elf.section_by_name(".text.hot");
        let warm = elf.section_by_name(".text.warm");
        let sections: Vec<_> = [Some(&text), hot.as_ref(), warm.as_ref()]
            .into_iter()
            .flatten()
            .map(|section| section.index())
            .collect();
        let symbols = elf
            .symbols()
            .filter(|symbol| {
                symbol.kind() == SymbolKind::Text
                    && symbol
                        .section_index()
                        .is_some_and(|index| sections.contains(&index))
            })
            .filter_map(|symbol| Some((symbol.name().ok()?.to_owned(), symbol.address())))
            .collect();
        Code {
            hot_start: hot.map(|hot| hot.address()),
            text_start: text.address(),
            symbols,
        }
    })
}

/// Fails unless the `placed` functions are at increasing addresses.
fn assert_in_order(program: &Path, placed: &[(&str, u64)]) {
    for pair in placed.windows(2) {
        assert!(
            pair[0].1 < pair[1].1,
            "{}: {} ({:#x}) is listed before {} ({:#x}) but placed after it",
            program.display(),
            pair[0].0,
            pair[0].1,
            pair[1].0,
            pair[1].1
        );
    }
}

#[test]
fn the_listed_functions_come_first_in_the_lists_order() {
    if option_env!("HWSTAT_HOT_FUNCTIONS_FIRST").is_none() {
        skip::skip(
            "layout::the_listed_functions_come_first_in_the_lists_order",
            "this build's linker is not LLD, the only one that takes link/hot-functions.txt \
             (build.rs); Rust >= 1.90 links x86_64 GNU/Linux with LLD unless a linker is configured",
        );
        return;
    }
    let list = hot_functions();
    for program in programs() {
        let code = code(&program);
        let placed: Vec<(&str, u64)> = list
            .iter()
            .filter_map(|name| {
                code.symbols
                    .get(name)
                    .map(|&address| (name.as_str(), address))
            })
            .collect();
        // The C start-up functions head the list and are in every program
        // of every profile; the Rust names match only the dist build's.
        assert!(
            placed.len() >= 5,
            "{}: only {} listed functions found",
            program.display(),
            placed.len()
        );
        let start = code.hot_start.unwrap_or(code.text_start);
        assert_eq!(placed[0].0, "_start", "{}", program.display());
        assert!(
            placed[0].1 - start < 64,
            "{}: _start at {:#x}, the code starts at {:#x}",
            program.display(),
            placed[0].1,
            start
        );
        // In .text.hot, the list's order. A listed function whose section
        // is named after another one (identical code the standard
        // library's objects keep once, under one of its names) is not
        // taken there by name: the symbol ordering file still places it
        // at the start of .text, before every function not listed.
        let (hot, rest): (Vec<_>, Vec<_>) = placed
            .into_iter()
            .partition(|&(_, address)| code.hot_start.is_some() && address < code.text_start);
        assert_in_order(&program, &hot);
        assert_in_order(&program, &rest);
        let listed: std::collections::HashSet<u64> = hot
            .iter()
            .chain(&rest)
            .map(|&(_, address)| address)
            .collect();
        let first_unlisted = code
            .symbols
            .iter()
            .filter(|&(_, &address)| address >= code.text_start && !listed.contains(&address))
            .min_by_key(|&(_, &address)| address);
        if let (Some(&(name, address)), Some((unlisted, &before))) = (rest.last(), first_unlisted) {
            assert!(
                address < before,
                "{}: {name} ({address:#x}) is listed but placed after {unlisted} ({before:#x}), \
                 which is not",
                program.display()
            );
        }
    }
}

/// Whether this build used `link/sections.ld`; if not, says so for `test`.
fn sections_ordered(test: &str) -> bool {
    let ordered = option_env!("HWSTAT_SECTIONS_ORDERED").is_some();
    if !ordered {
        skip::skip(
            test,
            "this build does not use link/sections.ld, which build.rs gives only to LLD on \
             x86_64; Rust >= 1.90 links x86_64 GNU/Linux with LLD unless a linker is configured",
        );
    }
    ordered
}

#[test]
fn functions_the_list_names_with_other_hashes_are_placed_with_it() {
    if !sections_ordered("layout::functions_the_list_names_with_other_hashes_are_placed_with_it") {
        return;
    }
    // Three functions of the main job, listed with the hashes of the dist
    // build; in any other build (this test's own debug build is one) only
    // their names with the hashes left open find them.
    let listed = hot_functions();
    let program = programs()
        .into_iter()
        .find(|program| program.ends_with("iostat-rs"))
        .expect("iostat-rs among the programs");
    let code = code(&program);
    for path in [
        "_ZN6hwstat6common3run11run_samples17h",
        "_ZN6hwstat6iostat3app3run17h",
        "_ZN6hwstat6iostat11render_text12TextRenderer15extended_report17h",
    ] {
        assert!(
            listed.iter().any(|name| name.starts_with(path)),
            "link/hot-functions.txt lists no {path}*"
        );
        let found: Vec<(&String, &u64)> = code
            .symbols
            .iter()
            .filter(|(name, _)| name.starts_with(path) && name.len() == path.len() + 17)
            .collect();
        assert!(!found.is_empty(), "{}: no {path}*", program.display());
        for (name, &address) in found {
            assert!(
                code.hot_start
                    .is_some_and(|start| (start..code.text_start).contains(&address)),
                "{}: {name} at {address:#x}, not in .text.hot or .text.warm",
                program.display()
            );
        }
    }
}

/// The address of each named section of `program`.
fn section_addresses(program: &Path) -> std::collections::HashMap<String, (u64, u64)> {
    in_elf(program, |elf| {
        elf.sections()
            .filter_map(|section| {
                let name = section.name().ok()?.to_owned();
                Some((name, (section.address(), section.size())))
            })
            .collect()
    })
}

/// The address of the data symbol of `program` whose name contains `part`.
fn data_symbol(program: &Path, part: &str) -> u64 {
    in_elf(program, |elf| {
        elf.symbols()
            .find(|symbol| symbol.name().is_ok_and(|name| name.contains(part)))
            .unwrap_or_else(|| panic!("{}: no symbol named *{part}*", program.display()))
            .address()
    })
}

#[test]
fn the_sections_every_run_reads_are_together() {
    if !sections_ordered("layout::the_sections_every_run_reads_are_together") {
        return;
    }
    for program in programs() {
        let sections = section_addresses(&program);
        let at = |name: &str| {
            sections
                .get(name)
                .unwrap_or_else(|| panic!("{}: no {name} section", program.display()))
                .0
        };
        // The exception tables, read only while unwinding, come after the
        // read-only data every run reads, not between it and the relocations.
        for read in [".rodata", ".eh_frame"] {
            assert!(
                at(".gcc_except_table") > at(read),
                "{}: .gcc_except_table at {:#x} is before {read} at {:#x}",
                program.display(),
                at(".gcc_except_table"),
                at(read)
            );
        }
        // This crate's constants follow .rodata; the other crates' go to
        // the end of the segment, after the exception tables. The code
        // every run executes (.plt, the listed functions) starts the text.
        for (before, after) in [
            (".plt", ".text.hot"),
            (".text.hot", ".text"),
            (".rodata", ".rodata.hwstat"),
            (".rodata.hwstat", ".rodata.rest"),
            (".rodata.rest", ".eh_frame_hdr"),
            (".gcc_except_table", ".rodata.deps"),
        ] {
            assert!(
                at(before) < at(after),
                "{}: {after} at {:#x} is not after {before} at {:#x}",
                program.display(),
                at(after),
                at(before)
            );
        }
        // What reports read in .rodata is at its start: itoa's digit
        // pairs (every integer of a JSON report; this crate's jump tables
        // have no symbol).
        let rodata = at(".rodata");
        let digit_pairs = data_symbol(&program, "itoa13DECIMAL_PAIRS");
        assert!(
            (rodata..rodata + 16 * 1024).contains(&digit_pairs),
            "{}: itoa's DECIMAL_PAIRS at {digit_pairs:#x}, not in the first 16 kB of .rodata \
             ({rodata:#x})",
            program.display()
        );
        // Loadable segments aligned to the kernel's 64 kB fault-around
        // window, so that its windows cover the same blocks of the file in
        // every run.
        let alignments = in_elf(&program, |elf| {
            let endian = elf.endian();
            elf.elf_program_headers()
                .iter()
                .filter(|header| header.p_type(endian) == object::elf::PT_LOAD)
                .map(|header| header.p_align(endian))
                .collect::<Vec<u64>>()
        });
        assert!(
            !alignments.is_empty() && alignments.iter().all(|&align| align >= 64 * 1024),
            "{}: loadable segments aligned to {alignments:?}, not 64 kB",
            program.display()
        );
        // The code every run executes outside .text is next to its start.
        for code in [".init", ".fini", ".plt"] {
            assert!(
                at(code) < at(".text"),
                "{}: {code} at {:#x} is after .text at {:#x}",
                program.display(),
                at(code),
                at(".text")
            );
        }
    }
}

#[test]
fn relative_relocations_are_packed() {
    if option_env!("HWSTAT_PACKED_RELOCATIONS").is_none() {
        skip::skip(
            "layout::relative_relocations_are_packed",
            "build.rs found that this machine's loader does not run programs with packed \
             relocations (DT_RELR needs glibc >= 2.36), or the build is a cross build",
        );
        return;
    }
    for program in programs() {
        let sections = section_addresses(&program);
        let packed = sections.get(".relr.dyn").map_or(0, |&(_, size)| size);
        let unpacked = sections.get(".rela.dyn").map_or(0, |&(_, size)| size);
        // Unpacked, the relative relocations alone took 54 kB in iostat-rs;
        // what stays in .rela.dyn are those that name a symbol.
        assert!(
            packed > 0,
            "{}: no packed relocations (.relr.dyn)",
            program.display()
        );
        assert!(
            unpacked < 16 * 1024,
            "{}: {unpacked} bytes of unpacked relocations (.rela.dyn)",
            program.display()
        );
    }
}

/// Resident and total pages of the mappings of `program` in process
/// `pid` that `wanted` picks by their permissions and file offset (fields
/// 2 and 3 of `/proc/PID/maps`), from the present bit (63) of
/// `/proc/PID/pagemap`.
fn resident_pages(pid: u32, program: &Path, wanted: impl Fn(&str, &str) -> bool) -> (u64, u64) {
    let page = 4096u64;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
    let mut pagemap = File::open(format!("/proc/{pid}/pagemap")).expect("pagemap");
    let (mut resident, mut total) = (0, 0);
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || !wanted(fields[1], fields[2]) || Path::new(fields[5]) != program {
            continue;
        }
        let (start, end) = fields[0].split_once('-').expect("a range");
        let start = u64::from_str_radix(start, 16).expect("hex");
        let end = u64::from_str_radix(end, 16).expect("hex");
        let pages = (end - start) / page;
        let mut entries = vec![0u8; pages as usize * 8];
        pagemap
            .seek(SeekFrom::Start(start / page * 8))
            .expect("seek");
        pagemap.read_exact(&mut entries).expect("pagemap entries");
        resident += entries
            .chunks_exact(8)
            .filter(|entry| u64::from_le_bytes((*entry).try_into().expect("8 bytes")) >> 63 == 1)
            .count() as u64;
        total += pages;
    }
    (resident, total)
}

/// Where a run reads its devices from: this machine's, or `count` made-up
/// ones put over `/proc/diskstats` and `/sys/block` in a private mount
/// namespace, read through the usual paths (`--sysroot` takes other code).
#[derive(Clone, Copy, Debug)]
enum Devices {
    ThisMachine,
    MadeUp(usize),
}

/// Writes `count` devices to `dir/diskstats` and `dir/block/<name>/stat`.
fn make_devices(dir: &Path, count: usize) {
    let mut diskstats = String::new();
    for i in 0..count {
        let n = i as u64 + 1;
        let counters = format!(
            "{} {} {} {} {} {} {} {} 0 {} {} 0 0 0 0 0 0",
            n * 1000,
            n,
            n * 8000,
            n * 3,
            n * 500,
            n,
            n * 4000,
            n * 2,
            n * 5,
            n * 6
        );
        diskstats.push_str(&format!(" 259 {i} nvme{i}n1 {counters}\n"));
        let device = dir.join("block").join(format!("nvme{i}n1"));
        std::fs::create_dir_all(&device).expect("a device directory");
        std::fs::write(device.join("stat"), format!("{counters}\n")).expect("a stat file");
    }
    std::fs::write(dir.join("diskstats"), diskstats).expect("diskstats");
}

/// Resident text pages, their total, and resident pages of the read-only
/// segment of `program` running `args` at an interval, taken after its
/// first device report, while it sleeps to the next: everything one report
/// needs has run.
fn resident_after_a_report(program: &Path, args: &[&str], devices: Devices) -> (u64, u64, u64) {
    // The made-up devices' files, removed when this returns or fails.
    let mut made_up = None;
    let mut command = match devices {
        Devices::ThisMachine => Command::new(program),
        Devices::MadeUp(count) => {
            let files = made_up.insert(crate::scratch::scratch("layout"));
            make_devices(files, count);
            let dir = files.display();
            namespace::command(
                &format!(
                    "mount --bind '{dir}/diskstats' /proc/diskstats && \
                     mount --bind '{dir}/block' /sys/block"
                ),
                program,
                &[] as &[&str],
            )
        }
    };
    let mut child = command
        .args(args)
        .args(["0.5", "3"])
        .env("LC_ALL", "C")
        .env("S_COLORS", "never")
        .stdout(Stdio::piped())
        .spawn()
        .expect("iostat-rs starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut in_report = false;
    for line in lines.by_ref() {
        let line = line.expect("a line");
        if line.starts_with("Device") {
            in_report = true;
        } else if in_report && line.is_empty() {
            break;
        }
    }
    assert!(
        in_report,
        "iostat-rs {args:?} ({devices:?}) printed no device report"
    );
    let (resident, total) = resident_pages(child.id(), program, |perms, _| perms == "r-xp");
    // The read-only segment starts the file; the RELRO part, read-only
    // too once relocated, has another offset.
    let (read_only, _) = resident_pages(child.id(), program, |perms, offset| {
        perms == "r--p" && offset == "00000000"
    });
    child.kill().ok();
    child.wait().expect("iostat-rs ends");
    (resident, total, read_only)
}

#[test]
#[ignore = "checks the dist build: cargo build --profile dist --bins && \
            HWSTAT_PROGRAMS_DIR=target/dist cargo test --test suite layout:: -- --include-ignored \
            (.ci/run does)"]
fn a_usual_run_keeps_little_of_the_program_resident() {
    let dir = std::env::var_os("HWSTAT_PROGRAMS_DIR")
        .expect("HWSTAT_PROGRAMS_DIR must name the dist build's directory (target/dist)");
    let program: PathBuf =
        std::fs::canonicalize(Path::new(&dir).join("iostat-rs")).expect("iostat-rs");
    // 1,000 devices take code a few do not: the whole sort of the new
    // devices, more growth of the device table. That code once ended
    // past the third window (BENCHMARKS.md, session 20).
    let mut runs = vec![Devices::ThisMachine];
    match namespace::unavailable() {
        None => runs.push(Devices::MadeUp(1000)),
        Some(why) => skip::skip(
            "layout::a_usual_run_keeps_little_of_the_program_resident at 1,000 devices",
            &format!("{why}; it puts made-up devices over /proc/diskstats and /sys/block"),
        ),
    }
    let crate_constants_end = section_addresses(&program)
        .get(".rodata.hwstat")
        .map_or(0, |&(start, size)| start + size);
    for devices in runs {
        for args in [&["-x"][..], &["-x", "-p", "ALL"]] {
            let (resident, total, read_only) = resident_after_a_report(&program, args, devices);
            eprintln!(
                "iostat-rs {args:?} ({devices:?}): {resident} of {total} text pages resident, \
                 {read_only} read-only data pages"
            );
            assert!(
                total > 0,
                "no executable mapping of {} found",
                program.display()
            );
            // Three of the kernel's 64 kB fault-around windows: the start of
            // the text (`.init`, `.plt`) and the listed block, which a run
            // keeps to 34 pages. One function of a report left out of the
            // list (`__udivti3`, once) costs a window more, 50 pages, which
            // a looser bound (a fifth of the text, 97 pages) let through.
            assert!(
                resident <= 48,
                "iostat-rs {args:?} ({devices:?}) keeps {resident} of its {total} text pages \
                 resident (more than three 64 kB windows): a function it runs is missing from \
                 link/hot-functions.txt, the list was not used, or the code a run executes \
                 outgrew three windows; run link/profile.sh"
            );
            // One fault-around window: its first page, read at start,
            // faults in the first 64 kB, and everything the run reads is
            // in them.
            assert!(
                read_only <= 16,
                "iostat-rs {args:?} ({devices:?}) keeps {read_only} pages of its read-only \
                 segment resident (more than the first 64 kB). Either link/hot-rodata.txt is \
                 stale or was not used (run link/profile.sh), or this crate's constants \
                 (.rodata.hwstat, ending at {crate_constants_end:#x}) outgrew the window, or a \
                 report now reads a `write!` or `format!` template, a merged string \
                 (.rodata.str1.1) that no list can place: build that text from literals \
                 (BENCHMARKS.md, \"The read-only window is on an edge\")"
            );
        }
    }
}
