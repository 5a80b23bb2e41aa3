//! Kernel tracepoints as tracefs describes them: where tracefs is mounted,
//! an event's perf `id` and the offsets of its fields in the raw record
//! (its `format` file), with one-line errors that say what to do.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where tracefs is looked for, in order (the second through debugfs).
pub const TRACEFS_DIRS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Why a tracepoint cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TracefsError {
    /// Neither place has tracefs.
    #[error(
        "tracefs is not mounted (no /sys/kernel/tracing/events): mount it with \
         `mount -t tracefs nodev /sys/kernel/tracing`"
    )]
    NotMounted,
    /// tracefs is there but not readable.
    #[error(
        "{path}: permission denied: reading tracefs needs root, or read access to it \
         (the group of its gid= mount option)"
    )]
    Denied {
        /// The file.
        path: String,
    },
    /// The kernel has no such event.
    #[error(
        "this kernel has no {event} tracepoint ({path} is missing; it needs \
         CONFIG_TRACEPOINTS and the block layer's trace events)"
    )]
    Missing {
        /// `system/name`.
        event: String,
        /// The directory looked for.
        path: String,
    },
    /// The `id` or `format` file is not what the kernel writes.
    #[error("{path}: {what}")]
    Malformed {
        /// The file.
        path: String,
        /// What was expected.
        what: String,
    },
}

/// A mounted tracefs.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

/// One field of a raw tracepoint record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

impl Field {
    /// The field's bytes in `raw`, a raw record: `None` when the record
    /// is too short for it, or when a damaged `format` file puts its end
    /// past the address space.
    pub fn bytes<'r>(&self, raw: &'r [u8]) -> Option<&'r [u8]> {
        raw.get(self.offset..self.offset.checked_add(self.size)?)
    }
}

/// An event: its perf id and its `format` file's fields.
#[derive(Debug, Clone)]
pub struct Event {
    /// The perf `config` of a `PERF_TYPE_TRACEPOINT` event.
    pub id: u64,
    fields: Vec<(String, Field)>,
    path: String,
}

impl Tracefs {
    /// Finds tracefs in [`TRACEFS_DIRS`] (the first with an `events`
    /// directory; a directory that cannot be read is refused with the
    /// privilege it needs).
    pub fn find() -> Result<Tracefs, TracefsError> {
        Tracefs::find_in(&TRACEFS_DIRS.map(Path::new))
    }

    /// [`Tracefs::find`] over other candidate directories.
    pub fn find_in(dirs: &[&Path]) -> Result<Tracefs, TracefsError> {
        for dir in dirs {
            let events = dir.join("events");
            match fs::metadata(&events) {
                Ok(m) if m.is_dir() => {
                    return Ok(Tracefs {
                        root: dir.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(TracefsError::Denied {
                        path: events.display().to_string(),
                    });
                }
                _ => {}
            }
        }
        Err(TracefsError::NotMounted)
    }

    /// Reads event `system/name`.
    pub fn event(&self, system: &str, name: &str) -> Result<Event, TracefsError> {
        let dir = self.root.join("events").join(system).join(name);
        let read = |file: &str| {
            let path = dir.join(file);
            fs::read_to_string(&path).map_err(|e| match e.kind() {
                io::ErrorKind::PermissionDenied => TracefsError::Denied {
                    path: path.display().to_string(),
                },
                io::ErrorKind::NotFound => TracefsError::Missing {
                    event: format!("{system}/{name}"),
                    path: dir.display().to_string(),
                },
                _ => TracefsError::Malformed {
                    path: path.display().to_string(),
                    what: e.to_string(),
                },
            })
        };
        let id_text = read("id")?;
        let id_path = dir.join("id").display().to_string();
        let id = id_text
            .trim_end()
            .parse()
            .map_err(|_| TracefsError::Malformed {
                path: id_path,
                what: "expected a decimal event id".into(),
            })?;
        let format_path = dir.join("format").display().to_string();
        Ok(Event {
            id,
            fields: parse_format(&read("format")?),
            path: format_path,
        })
    }
}

impl Event {
    /// The field called `name`, or an error naming the `format` file.
    pub fn field(&self, name: &str) -> Result<Field, TracefsError> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, f)| f)
            .ok_or_else(|| TracefsError::Malformed {
                path: self.path.clone(),
                what: format!("no field `{name}`"),
            })
    }
}

/// The fields of a `format` file: lines such as
/// `field:dev_t dev;<TAB>offset:8;<TAB>size:4;<TAB>signed:0;`. The name is the last
/// word of the declaration, without an array suffix.
pub fn parse_format(text: &str) -> Vec<(String, Field)> {
    let mut fields = Vec::new();
    for line in text.lines() {
        let mut decl = None;
        let (mut offset, mut size) = (None, None);
        for part in line.trim().split(';') {
            let part = part.trim();
            if let Some(d) = part.strip_prefix("field:") {
                decl = Some(d);
            } else if let Some(v) = part.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = part.strip_prefix("size:") {
                size = v.parse().ok();
            }
        }
        let (Some(decl), Some(offset), Some(size)) = (decl, offset, size) else {
            continue;
        };
        let Some(last) = decl.split_whitespace().last() else {
            continue;
        };
        let name = last.split('[').next().unwrap_or(last);
        fields.push((name.to_string(), Field { offset, size }));
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `block_rq_issue`'s format on Linux 6.18, as tracefs prints it.
    const ISSUE: &str = "name: block_rq_issue\nID: 2104\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\
\tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
\tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\n\
print fmt: \"%d,%d\", REC->dev\n";

    #[test]
    fn format_fields_by_name() {
        let f = parse_format(ISSUE);
        let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|&(_, v)| v);
        assert_eq!(get("common_type"), Some(Field { offset: 0, size: 2 }));
        assert_eq!(get("dev"), Some(Field { offset: 8, size: 4 }));
        assert_eq!(
            get("sector"),
            Some(Field {
                offset: 16,
                size: 8
            })
        );
        assert_eq!(
            get("rwbs"),
            Some(Field {
                offset: 34,
                size: 10
            })
        );
        assert_eq!(
            get("cmd"),
            Some(Field {
                offset: 60,
                size: 4
            })
        );
        assert_eq!(f.len(), 7);
    }

    /// A field's bytes are those of its offset and size; a record too
    /// short for it has none, nor has any record a field that a damaged
    /// `format` file puts past the address space (its end overflowed, a
    /// panic in debug builds).
    #[test]
    fn a_field_past_the_address_space_is_in_no_record() {
        let raw: Vec<u8> = (0..64).collect();
        let field = |offset, size| Field { offset, size };
        assert_eq!(field(8, 4).bytes(&raw), Some(&[8, 9, 10, 11][..]));
        assert_eq!(field(62, 4).bytes(&raw), None);
        let far = parse_format("\tfield:dev_t dev;\toffset:18446744073709551615;\tsize:4;\n");
        assert_eq!(far, [("dev".to_string(), field(usize::MAX, 4))]);
        assert_eq!(far[0].1.bytes(&raw), None);
    }

    #[test]
    fn an_empty_directory_is_tracefs_not_mounted() {
        let dir = crate::common::scratch::scratch("tracefs");
        let err = Tracefs::find_in(&[&dir]).unwrap_err();
        assert_eq!(err, TracefsError::NotMounted);
        assert!(
            err.to_string()
                .contains("mount -t tracefs nodev /sys/kernel/tracing")
        );
        fs::create_dir_all(dir.join("events")).unwrap();
        let t = Tracefs::find_in(&[&dir]).unwrap();
        let err = t.event("block", "block_rq_issue").unwrap_err();
        assert!(matches!(err, TracefsError::Missing { .. }), "{err}");
    }
}
