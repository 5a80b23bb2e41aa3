//! Link-time choices for the programs.
//!
//! **The unwinder from `libgcc_eh.a`.** The stack unwinder that Rust's
//! standard library calls (libgcc's `_Unwind_*`) is linked from gcc's
//! static `libgcc_eh.a` instead of the shared `libgcc_s.so.1`. Why: loading
//! `libgcc_s.so.1` runs its CPU-feature constructor (`__cpu_indicator_init`,
//! a series of `cpuid` instructions, each a trap to the hypervisor in a VM)
//! and maps one more library. Measured on the 2-core Firecracker VM
//! (BENCHMARKS.md, "Start-up"): 0.13 ms of the ~1 ms an `iostat-rs -x` run
//! costs, more than the program's own code. gcc ships `libgcc_eh.a` with the
//! compiler itself (no static C library is needed, on Debian as on Fedora),
//! and the unwinder behaves the same: panics still unwind (vcpustat relies
//! on it) and backtraces still print. Only glibc targets get this;
//! elsewhere the standard library's own choice stands.
//!
//! **Hot code first.** `link/hot-functions.txt` lists the functions usual
//! runs execute (written by `link/profile.sh`); the linker places them
//! together at the start of the text. The kernel maps text 64 kB around
//! each page a run touches, so with the hot code scattered through 2 MB of
//! text nearly all of it was resident in every run; placed together, a run
//! keeps about a fifth of it (BENCHMARKS.md, "Hot code first"). Only LLD
//! takes a symbol ordering file, so the option is given only when the
//! linker rustc uses for this target is LLD (Rust's default for
//! x86_64 GNU/Linux since 1.90); with another linker the build is the same
//! as before, in another order.
//!
//! **Sections in the order runs read them.** With LLD on x86_64,
//! `link/sections.ld` moves the exception tables (`.gcc_except_table`,
//! read only while a panic unwinds) from between the relocations and
//! `.rodata` to the end of the read-only segment, what every report reads
//! in `.rodata` to its start, and `.init`, `.fini` and `.plt` from the end
//! of the text to its start, next to the hot functions: for the same 64 kB
//! reason, fewer windows resident (BENCHMARKS.md, "Read-only data
//! together"). The script also places the listed functions, in
//! `.text.hot`: by their exact names, as the symbol ordering file does,
//! then by their names with the hashes left open ([`hot_text`]), so that
//! a build whose names carry other hashes keeps most of the order. Where
//! the script says `HOT_RODATA`, build.rs writes the input sections of
//! `link/hot-rodata.txt` (also written by `link/profile.sh`): the
//! constants usual runs read, which with this crate's own constants then
//! end in the read-only segment's first 64 kB;
//! where it says `DEPENDENCY_RODATA`, the constants of the standard
//! library and the dependencies (`link/dependency-rodata.txt`), which go
//! to its end (BENCHMARKS.md, "Read-only data a run reads, first").
//!
//! **Segments aligned to 64 kB** (`-z max-page-size=65536`, with the
//! script). The kernel places the program at an address aligned to its
//! segments' alignment, so each 64 kB fault-around window then covers the
//! same 64 kB of the file in every run, the blocks the layout above fills,
//! instead of straddling two of them at a random 4 kB offset; the page
//! cache's large folios, 64 kB aligned in the file, are mapped whole. The
//! text a `-x` run keeps went from 160 to 204 kB (by the offset) to 140 kB
//! in every run. The cost: 4 fewer bits of address randomisation for the
//! program's own image (24 of 28 on x86_64), the alignment aarch64 and
//! ppc64le programs have by default.
//!
//! **Packed relocations.** A position-independent program carries one
//! relocation per pointer in its read-only data; packed (`DT_RELR`, glibc
//! 2.36 and later) they take 3 kB instead of 54 kB, which every run reads
//! at start. Only when the build is for this machine and a probe program
//! linked so runs here (see [`loader_takes_packed_relocations`]).

use std::env;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The list of hot functions, relative to the package.
const HOT_FUNCTIONS: &str = "link/hot-functions.txt";

/// The linker script that orders some sections (see the module's doc).
const SECTION_ORDER: &str = "link/sections.ld";

/// Segments aligned to 64 kB, the kernel's fault-around window (see the
/// module's doc).
const SEGMENT_ALIGNMENT: &str = "-Wl,-z,max-page-size=65536";

/// The read-only data usual runs read, relative to the package, and the
/// line of [`SECTION_ORDER`] that stands for its sections.
const HOT_RODATA: (&str, &str) = ("link/hot-rodata.txt", "HOT_RODATA");

/// The groups of anonymous constants of the standard library and the
/// dependencies, and the line of [`SECTION_ORDER`] that stands for them.
const DEPENDENCY_RODATA: (&str, &str) = ("link/dependency-rodata.txt", "DEPENDENCY_RODATA");

/// The linker option for relative relocations in the packed (RELR) form.
const PACK_RELATIVE_RELOCS: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && target_env == "gnu" {
        // `-bundle`: passed to the final link, ahead of the standard
        // library's `-lgcc_s`, which `--as-needed` then leaves out.
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
    let package = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // link/profile.sh's build: the linker's own layout, whose code is all in
    // `.text`, the one section valgrind attributes to the program (code in
    // `.text.hot` shows as `???`). The function names are the same.
    let plain = env::var_os("HWSTAT_PLAIN_LAYOUT").is_some();
    let lld = !plain && os == "linux" && probe_link(&[]).is_some_and(|probe| probe.uses_lld());
    if lld {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            package.join(HOT_FUNCTIONS).display()
        );
        // Names the list has and a program does not (each program uses
        // part of the list; a dependency upgrade renames some) are skipped.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        // Tells tests/suite/layout.rs that the order was asked for.
        println!("cargo:rustc-env=HWSTAT_HOT_FUNCTIONS_FIRST=1");
    }
    // The script names x86-64's sections: elsewhere `.plt` is not code
    // (on ppc64 it is writable data), and the layout was measured here.
    if lld && env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "x86_64") {
        let script = section_order_script(&package);
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
        println!("cargo:rustc-link-arg-bins={SEGMENT_ALIGNMENT}");
        println!("cargo:rustc-env=HWSTAT_SECTIONS_ORDERED=1");
    }
    if os == "linux" && target_env == "gnu" && loader_takes_packed_relocations() {
        println!("cargo:rustc-link-arg-bins={PACK_RELATIVE_RELOCS}");
        // Tells tests/suite/layout.rs that packed relocations were asked for.
        println!("cargo:rustc-env=HWSTAT_PACKED_RELOCATIONS=1");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={HOT_FUNCTIONS}");
    println!("cargo:rerun-if-changed={SECTION_ORDER}");
    println!("cargo:rerun-if-changed={}", HOT_RODATA.0);
    println!("cargo:rerun-if-changed={}", DEPENDENCY_RODATA.0);
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo:rerun-if-env-changed=HWSTAT_PLAIN_LAYOUT");
}

/// The lines of [`SECTION_ORDER`] that stand for the input sections of
/// the functions of [`HOT_FUNCTIONS`]: those of the main job (the list up
/// to [`MAIN_JOB_END`]), then the others.
const HOT_TEXT: (&str, &str) = ("HOT_TEXT_MAIN", "HOT_TEXT_REST");

/// The line of [`HOT_FUNCTIONS`] after the functions of the main job
/// (`iostat-rs -x`, link/profile.sh).
const MAIN_JOB_END: &str = "#main-job-end";

/// Writes the linker script: [`SECTION_ORDER`] with the marker line of
/// [`HOT_RODATA`] and of [`DEPENDENCY_RODATA`] each replaced by one
/// input-section pattern per line of its list, and those of [`HOT_TEXT`] by
/// the sections of [`HOT_FUNCTIONS`] (see [`hot_text`]); a missing list
/// gives none. Returns its path, in `OUT_DIR`.
fn section_order_script(package: &std::path::Path) -> PathBuf {
    let template = std::fs::read_to_string(package.join(SECTION_ORDER))
        .unwrap_or_else(|e| panic!("{SECTION_ORDER}: {e}"));
    let names = |list: &str| -> Vec<String> {
        std::fs::read_to_string(package.join(list))
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|name| !name.is_empty() && !name.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let input_sections = |sections: Vec<String>| -> String {
        sections.iter().map(|s| format!("    *({s})\n")).collect()
    };
    let rodata_sections = |sections: Vec<String>| -> String {
        input_sections(sections.iter().map(|s| without_counter(s)).collect())
    };
    let listed = std::fs::read_to_string(package.join(HOT_FUNCTIONS)).unwrap_or_default();
    let (main_job, rest) = listed.split_once(MAIN_JOB_END).unwrap_or(("", &listed));
    let functions = |part: &str| -> Vec<String> {
        part.lines()
            .map(str::trim)
            .filter(|name| !name.is_empty() && !name.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let (main_text, rest_text) = hot_text(&functions(main_job), &functions(rest));
    let replacements = [
        (HOT_RODATA.1, rodata_sections(names(HOT_RODATA.0))),
        (
            DEPENDENCY_RODATA.1,
            input_sections(names(DEPENDENCY_RODATA.0)),
        ),
        (HOT_TEXT.0, input_sections(main_text)),
        (HOT_TEXT.1, input_sections(rest_text)),
    ];
    let script: String = template
        .lines()
        .map(|line| {
            replacements
                .iter()
                .find(|(mark, _)| line.trim() == *mark)
                .map_or_else(|| format!("{line}\n"), |(_, patterns)| patterns.clone())
        })
        .collect();
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("sections.ld");
    std::fs::write(&out, script).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    out
}

/// A switch table's section with LLVM's counter left open: the tables of
/// one function are named `.rodata..Lswitch.table.FUNCTION.N` (`.rel`
/// after it when they hold pointers), where `N` counts the module's
/// anonymous constants, so any change elsewhere in the crate renumbers
/// them and an exact name in `link/hot-rodata.txt` goes stale (twice, in
/// sessions 34 and 35). The function names the table; other sections are
/// kept as they are (an anonymous constant, `.Lanon.HASH.N`, has only its
/// counter to tell it from the crate's thousands of others).
fn without_counter(section: &str) -> String {
    let Some(table) = section.strip_prefix(".rodata..Lswitch.table.") else {
        return section.to_owned();
    };
    let (body, rel) = match table.strip_suffix(".rel") {
        Some(body) => (body, ".rel"),
        None => (table, ""),
    };
    match body.rsplit_once('.') {
        Some((function, counter))
            if !counter.is_empty() && counter.bytes().all(|b| b.is_ascii_digit()) =>
        {
            format!(".rodata..Lswitch.table.{function}.*{rel}")
        }
        _ => section.to_owned(),
    }
}

/// The input sections of the functions `names`, in the order the linker
/// is to place them: each function's own section (`.text.NAME`, or
/// `.text.unlikely.NAME` for one the compiler took for cold) by its
/// exact name, as this toolchain and Cargo.lock name it, then the same
/// with the hashes in the name left open ([`without_hashes`]), once each.
/// In the build the list was made from, the exact names take the listed
/// functions in the list's order, and the patterns only add other
/// instantiations of the same generic functions after them. In a build
/// whose names carry other hashes, what still matches exactly (the
/// standard library's own functions, with the same Rust release) comes
/// first and the patterns take the rest: `iostat-rs -x` kept 65 text
/// pages resident instead of 208 (`cargo install` without `--locked`).
/// Each pattern right after its name instead would add those other
/// instantiations inside the main job's code and push it into a fourth
/// 64 kB window (50 pages instead of 34; BENCHMARKS.md, session 30).
///
/// Given the main job's functions and the others, gives the sections of
/// the main job's (exact names), then those of the others (exact names,
/// then every pattern): link/sections.ld ends the first block at a 64 kB
/// boundary.
fn hot_text(main_job: &[String], others: &[String]) -> (Vec<String>, Vec<String>) {
    let mut patterns: Vec<String> = Vec::new();
    for name in main_job.iter().chain(others) {
        let pattern = without_hashes(name);
        if pattern != *name && !patterns.contains(&pattern) {
            patterns.push(pattern);
        }
    }
    (
        function_sections(main_job.iter()),
        function_sections(others.iter().chain(&patterns)),
    )
}

/// The input sections of the functions (or name patterns) `names`.
fn function_sections<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    names
        .map(|name| format!(".text.{name} .text.unlikely.{name}"))
        .collect()
}

/// A linker-script pattern for the symbol `name` with its hashes left
/// open: the trailing `17h<16 hex digits>E` of a legacy Rust name, and in
/// a v0 name (`_R...`) every crate disambiguator (`Cs<base 62>_`) and
/// every back-reference (`B<base 62>_`, an offset into the name, which
/// moves when a disambiguator's length does). Other names are returned as
/// they are. The pattern matches at least `name` itself: it only turns
/// parts of it into `*`.
fn without_hashes(name: &str) -> String {
    if let Some(path) = name.strip_prefix("_ZN") {
        let hash = path.len().checked_sub("17h0123456789abcdefE".len());
        if let Some(start) = hash.filter(|&start| {
            let tail = &path.as_bytes()[start..];
            tail.starts_with(b"17h")
                && tail.ends_with(b"E")
                && tail[3..tail.len() - 1].iter().all(u8::is_ascii_hexdigit)
        }) {
            return format!("_ZN{}17h*E", &path[..start]);
        }
        return name.to_owned();
    }
    // v0 names are ASCII; anything else is left as it is.
    if !name.starts_with("_R") || !name.is_ascii() {
        return name.to_owned();
    }
    // Identifiers in a v0 name are `<decimal length><bytes>`; the tags
    // `Cs` and `B` are read only outside them.
    let bytes = name.as_bytes();
    let mut pattern = String::from("_R");
    let mut at = 2;
    while at < bytes.len() {
        let rest = &bytes[at..];
        // A disambiguator after a tag (`Ms4_`: the fifth impl block), kept
        // as it is; read as an identifier, its digits would swallow what
        // follows.
        let disambiguator = (rest[0] == b's' && bytes[at - 1].is_ascii_uppercase())
            .then(|| base62_number(&rest[1..]))
            .flatten();
        if let Some(end) = disambiguator {
            pattern.push_str(&name[at..at + end + 2]);
            at += end + 2;
        } else if rest[0].is_ascii_digit() {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let length: usize = name[at..at + digits].parse().unwrap_or(usize::MAX);
            // An identifier that starts with a digit or `_` has a `_` separator.
            let separator = usize::from(rest.get(digits) == Some(&b'_'));
            let end = (at + digits + separator)
                .saturating_add(length)
                .min(bytes.len());
            pattern.push_str(&name[at..end]);
            at = end;
        } else if rest.starts_with(b"Cs") || rest[0] == b'B' {
            let tag = if rest[0] == b'B' { 1 } else { 2 };
            match base62_number(&rest[tag..]) {
                Some(end) => {
                    pattern.push_str(&name[at..at + tag]);
                    pattern.push_str("*_");
                    at += tag + end + 1;
                }
                None => {
                    pattern.push_str(&name[at..]);
                    at = bytes.len();
                }
            }
        } else {
            pattern.push(char::from(rest[0]));
            at += 1;
        }
    }
    pattern
}

/// The length of the base-62 number `bytes` starts with, when a `_` ends
/// it (as in a v0 disambiguator or back-reference).
fn base62_number(bytes: &[u8]) -> Option<usize> {
    let end = bytes.iter().position(|&b| b == b'_')?;
    bytes[..end]
        .iter()
        .all(u8::is_ascii_alphanumeric)
        .then_some(end)
}

/// Whether the programs can carry their relative relocations packed
/// (`DT_RELR`): only when building for this very machine, and a probe
/// program linked so runs here. Such a program needs glibc 2.36 or later
/// (it requires the version `GLIBC_ABI_DT_RELR`, which older loaders
/// refuse) and binutils 2.38 or LLD to link; a cross build, or any doubt,
/// keeps the usual form.
fn loader_takes_packed_relocations() -> bool {
    if env::var("HOST").ok() != env::var("TARGET").ok() {
        return false;
    }
    let Some(probe) = probe_link(&[PACK_RELATIVE_RELOCS]) else {
        return false;
    };
    // A linker that does not know the option (binutils before 2.38) only
    // warns: then the probe has no `.relr.dyn` section, whose name would
    // be in its section-name table.
    let packed = std::fs::read(&probe.program).is_ok_and(|elf| {
        elf.windows(b".relr.dyn\0".len())
            .any(|w| w == b".relr.dyn\0")
    });
    packed
        && Command::new(&probe.program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}

/// An empty program linked as this build links its programs.
struct LinkProbe {
    /// The link command rustc ran.
    command_line: String,
    /// The linked program.
    program: PathBuf,
}

impl LinkProbe {
    /// Whether the linker is LLD.
    fn uses_lld(&self) -> bool {
        self.command_line.contains("-fuse-ld=lld") || self.command_line.contains("ld.lld")
    }
}

/// Links an empty program with this build's flags, plus `link_args`, and
/// returns the link command rustc printed. `None` when anything fails.
fn probe_link(link_args: &[&str]) -> Option<LinkProbe> {
    let rustc = env::var_os("RUSTC")?;
    let out_dir = env::var_os("OUT_DIR")?;
    let target = env::var("TARGET").ok()?;
    let name = format!("link_probe{}", link_args.len());
    let program = PathBuf::from(out_dir).join(&name);
    let mut command = Command::new(rustc);
    command
        .args([
            "--target",
            &target,
            "--crate-type",
            "bin",
            "--crate-name",
            &name,
        ])
        .args(["--print", "link-args", "-o"])
        .arg(&program)
        .arg("-");
    // The flags and linker this build uses (RUSTFLAGS, config, --config).
    if let Ok(flags) = env::var("CARGO_ENCODED_RUSTFLAGS") {
        command.args(flags.split('\x1f').filter(|flag| !flag.is_empty()));
    }
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        command.arg("-C").arg({
            let mut option = std::ffi::OsString::from("linker=");
            option.push(linker);
            option
        });
    }
    for arg in link_args {
        command.arg("-C").arg(format!("link-arg={arg}"));
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"fn main() {}\n");
    }
    let output = child.wait_with_output().ok()?;
    output.status.success().then(|| LinkProbe {
        command_line: String::from_utf8_lossy(&output.stdout).into_owned(),
        program,
    })
}
