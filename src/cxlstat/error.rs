//! cxlstat's errors, each a one-line message that says what to do.

use std::io;

use crate::common::excerpt::excerpt_arg;

/// Everything that can stop cxlstat.
#[derive(Debug, thiserror::Error)]
pub enum CxlError {
    /// A sysfs file or directory could not be read.
    #[error("cannot read {path}: {reason}")]
    Sysfs {
        /// Kernel path.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// A sysfs file did not hold what the kernel writes there.
    #[error("{path}: {problem}")]
    BadFile {
        /// Kernel path.
        path: String,
        /// What was expected and what was found instead.
        problem: String,
    },
    /// No `cxl_pmu_*` PMU exists.
    #[error(
        "no CXL PMU found under {dir}: cxlstat needs Linux 6.5 or later with CONFIG_CXL_PMU \
         (module cxl_pmu loaded) and a CXL memory device with a CPMU (cxl_pmu_memX.Y)"
    )]
    NoCxlPmu {
        /// The directory searched.
        dir: String,
    },
    /// A PMU name that is not a CXL PMU here.
    #[error(
        "unknown CXL PMU {}{}",
        excerpt_arg(name),
        hint(suggestions, "CXL PMUs here")
    )]
    UnknownPmu {
        /// The name given.
        name: String,
        /// Closest existing names.
        suggestions: Vec<String>,
    },
    /// An event name that no selected PMU has.
    #[error(
        "unknown event {} {place}{}",
        excerpt_arg(name),
        hint(suggestions, "did you mean")
    )]
    UnknownEvent {
        /// The name given.
        name: String,
        /// Where it was looked for.
        place: String,
        /// Closest known names.
        suggestions: Vec<String>,
    },
    /// A CXL-defined event that the chosen PMUs do not offer.
    #[error(
        "event {name:?} is a CXL event not offered by {place} (no counter of the device \
         supports it){}",
        hint(offered_by, "offered by")
    )]
    NotOffered {
        /// The event name.
        name: String,
        /// The PMUs searched.
        place: String,
        /// The PMUs that do offer it.
        offered_by: Vec<String>,
    },
    /// A term that the PMU's `format/` does not define.
    #[error("unknown term {} for {pmu}; valid terms: {}", excerpt_arg(term), valid.join(", "))]
    UnknownTerm {
        /// PMU name.
        pmu: String,
        /// The term given.
        term: String,
        /// The terms that exist.
        valid: Vec<String>,
    },
    /// A value wider than its field.
    #[error("{pmu}/{label}/: {reason}")]
    BadValue {
        /// PMU name.
        pmu: String,
        /// Event label.
        label: String,
        /// Why.
        reason: String,
    },
    /// An event specification that does not parse or does not make sense.
    #[error("{0}")]
    Spec(String),
    /// perf_event_open failed.
    #[error("cannot open {pmu}/{label}/ on CPU {cpu}: {explanation}")]
    Open {
        /// PMU name.
        pmu: String,
        /// Event label.
        label: String,
        /// CPU.
        cpu: u32,
        /// What the errno means here.
        explanation: String,
        /// The errno of the refusal, when the kernel gave one that is not
        /// about the CPU.
        errno: Option<i32>,
    },
    /// Per-task counting or sampling was asked for.
    #[error(
        "{0} is not possible: CXL PMUs count system-wide only (the driver has no per-task \
         context and refuses sampling and task events with EOPNOTSUPP); drop it, cxlstat counts \
         system-wide (-a) on the PMU's cpumask CPU"
    )]
    PerTask(String),
    /// The command to run could not be started.
    #[error("cannot run {program}: {reason}")]
    Command {
        /// Program name.
        program: String,
        /// Why.
        reason: String,
    },
    /// The source of kernel files could not be opened (`--replay`,
    /// `--record`), or a replay's recording does not hold what is asked.
    #[error("{0}")]
    Setup(String),
    /// A replayed recording holds a counter reading or a time that no
    /// kernel gives (a count or time that goes back, a read of the wrong
    /// length): it was edited or damaged.
    #[error("{origin}: {problem}; the recording is damaged")]
    Damaged {
        /// Where: `FILE:LINE: frame K`, with `: entry "values KEY"` for a reading.
        origin: String,
        /// What was wrong, and what was expected.
        problem: String,
    },
    /// The charts (`--svg`) could not be made or written.
    #[error("{0}")]
    Chart(String),
    /// Writing the output failed.
    #[error("cannot write output: {0}")]
    Output(#[from] io::Error),
}

fn hint(names: &[String], lead: &str) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; {lead}: {}", names.join(", "))
    }
}

impl CxlError {
    /// A file that could not be read.
    pub fn sysfs(path: &str, err: io::Error) -> CxlError {
        CxlError::Sysfs {
            path: path.to_string(),
            reason: err.to_string(),
        }
    }

    /// A file with unexpected contents: `problem` says what was expected
    /// and quotes what was found with [`excerpt`](crate::common::excerpt::excerpt).
    pub fn bad_file(path: &str, problem: &str) -> CxlError {
        CxlError::BadFile {
            path: path.to_string(),
            problem: problem.to_string(),
        }
    }
}

/// Says what a `perf_event_open` errno means for a CXL PMU event.
pub fn explain_open_errno(
    err: &io::Error,
    attr_text: &str,
    pmu: &str,
    paranoid: Option<i64>,
) -> String {
    let paranoid = paranoid
        .map(|p| format!(" (kernel.perf_event_paranoid is {p})"))
        .unwrap_or_default();
    match err.raw_os_error() {
        Some(errno @ (libc::EACCES | libc::EPERM)) => format!(
            "permission denied ({}): system-wide counting needs root or CAP_PERFMON{paranoid}; \
             run as root, or grant the binary the capability with \
             `sudo setcap cap_perfmon+ep $(command -v cxlstat)`",
            if errno == libc::EPERM {
                "EPERM"
            } else {
                "EACCES"
            }
        ),
        Some(libc::EINVAL) => format!(
            "the device does not support {attr_text} (EINVAL): no fixed counter with exactly this \
             mask and no configurable counter whose supported events cover it; \
             see `cxlstat --list-events {pmu}`"
        ),
        Some(libc::EOPNOTSUPP) => "not supported (EOPNOTSUPP): CXL PMUs refuse sampling and \
             per-task counting; count system-wide"
            .to_string(),
        Some(libc::ENOENT) => "the PMU is gone or its type changed (ENOENT); the device may \
             have been removed, check `cxlstat --list`"
            .to_string(),
        Some(libc::ENODEV) | Some(libc::ENXIO) => format!(
            "no such device ({}): the device was removed, or the CPU of the PMU's cpumask \
             went offline; check `cxlstat --list`",
            if err.raw_os_error() == Some(libc::ENODEV) {
                "ENODEV"
            } else {
                "ENXIO"
            }
        ),
        Some(libc::E2BIG) => format!(
            "the kernel does not know a perf_event_attr field cxlstat set ({err}); \
             it is older than the CXL PMU driver"
        ),
        Some(libc::EMFILE) => "too many open files (EMFILE): cxlstat opens up to the hard \
             open-file limit (`ulimit -Hn`); raise it, or count fewer events"
            .to_string(),
        Some(libc::ENFILE) => "the system has too many open files (ENFILE): raise \
             fs.file-max, or count fewer events"
            .to_string(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explain(errno: i32) -> String {
        explain_open_errno(
            &io::Error::from_raw_os_error(errno),
            "vid=0x19e5,gid=0x0,mask=0xff",
            "cxl_pmu_mem0.0",
            Some(2),
        )
    }

    #[test]
    fn open_errors_say_what_they_mean_for_a_cxl_pmu() {
        let e = explain(libc::EACCES);
        assert!(
            e.contains("CAP_PERFMON")
                && e.contains("perf_event_paranoid is 2")
                && e.contains("setcap cap_perfmon+ep"),
            "{e}"
        );
        let e = explain(libc::EINVAL);
        assert!(
            e.contains("does not support vid=0x19e5,gid=0x0,mask=0xff (EINVAL)"),
            "{e}"
        );
        assert!(e.contains("cxlstat --list-events cxl_pmu_mem0.0"), "{e}");
        let e = explain(libc::EOPNOTSUPP);
        assert!(e.contains("sampling") && e.contains("per-task"), "{e}");
        assert!(explain(libc::ENODEV).contains("removed, or the CPU of the PMU's cpumask"));
        assert!(explain(libc::ENOENT).starts_with("the PMU is gone or its type changed (ENOENT)"));
        assert!(explain(libc::EPERM).starts_with("permission denied (EPERM)"));
        let e = explain(libc::EMFILE);
        assert!(
            e.starts_with("too many open files (EMFILE): ") && e.contains("ulimit -Hn"),
            "{e}"
        );
        assert!(explain(libc::ENFILE).contains("fs.file-max"));
        assert!(explain(libc::E2BIG).contains("perf_event_attr field"));
    }
}
