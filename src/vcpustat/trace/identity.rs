//! The partition and clock identity a recording carries: `partition_id`
//! from lparcfg, the time-base frequency from /proc/cpuinfo.

use crate::common::excerpt::excerpt_arg;
use crate::common::osname;
use crate::common::source::Source;

/// The lparcfg paths, newest first.
pub const LPARCFG: [&str; 2] = ["/proc/powerpc/lparcfg", "/proc/ppc64/lparcfg"];

/// Finds `key=value` in lparcfg text.
pub fn lparcfg_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then_some(v.trim())
    })
}

/// Where the partition's name is (lparstat reads it there too).
pub const PARTITION_NAME: &str = "/proc/device-tree/ibm,partition-name";

/// Which partition of which machine this is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// `partition_id=` of lparcfg.
    pub id: u32,
    /// The partition's name from the device tree, if present.
    pub name: Option<String>,
    /// `serial_number=` of lparcfg: the machine's serial number, if present.
    pub system_serial: Option<String>,
}

/// Reads the partition identity: `partition_id` and `serial_number` of
/// lparcfg, and the partition name of the device tree. When no lparcfg can
/// be read, the error names each path tried, the one the documentation
/// names first, with its error.
pub fn partition(source: &dyn Source) -> Result<Partition, String> {
    let mut errors = Vec::new();
    for path in LPARCFG {
        match source.read(path) {
            Ok(bytes) => {
                // Every byte is kept, as in a device name (`osname`): a
                // serial number or a partition name that is not UTF-8 is
                // recorded and shown as its bytes.
                let text = osname::from_bytes(&bytes);
                let id = lparcfg_value(&text, "partition_id").ok_or_else(|| {
                    format!("{path}: no partition_id= line (is this a pseries LPAR?)")
                })?;
                let id = id.parse::<u32>().map_err(|_| {
                    format!("{path}: partition_id={} is not a number", excerpt_arg(id))
                })?;
                let name = source.read(PARTITION_NAME).ok().and_then(|raw| {
                    let text = osname::from_bytes(&raw);
                    let name = text.trim_end_matches('\0').trim();
                    (!name.is_empty()).then(|| name.to_string())
                });
                let system_serial = lparcfg_value(&text, "serial_number").map(str::to_string);
                return Ok(Partition {
                    id,
                    name,
                    system_serial,
                });
            }
            Err(e) => errors.push(format!("{path}: {e}")),
        }
    }
    Err(format!(
        "cannot read the partition identity ({}); trace needs a pseries LPAR",
        errors.join("; ")
    ))
}

/// Reads the `timebase` line of /proc/cpuinfo (ticks per second).
pub fn timebase_hz(source: &dyn Source) -> Result<u64, String> {
    let text = source
        .read_string("/proc/cpuinfo")
        .map_err(|e| format!("/proc/cpuinfo: {e}"))?;
    let value = text
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == "timebase").then_some(value.trim())
        })
        .ok_or("/proc/cpuinfo: no timebase line (not a POWER system?)")?;
    match value.parse::<u64>() {
        Ok(hz) if hz > 0 => Ok(hz),
        _ => Err(format!(
            "/proc/cpuinfo: timebase {value:?} is not a frequency in Hz"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::source::RootFs;

    #[test]
    fn reads_partition_and_timebase_through_the_source() {
        let dir = crate::common::scratch::scratch("ident");
        std::fs::create_dir_all(dir.join("proc/ppc64")).unwrap();
        std::fs::write(
            dir.join("proc/ppc64/lparcfg"),
            "lparcfg 1.9\nserial_number=IBM,02ABC\npartition_id=12\nshared_processor_mode=1\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("proc/cpuinfo"),
            "processor\t: 0\ncpu\t\t: POWER9\n\ntimebase\t: 512000000\nplatform\t: pSeries\n",
        )
        .unwrap();
        let src = RootFs::new(&dir);
        let p = partition(&src).unwrap();
        assert_eq!(
            (p.id, p.name, p.system_serial.as_deref()),
            (12, None, Some("IBM,02ABC"))
        );
        std::fs::create_dir_all(dir.join("proc/device-tree")).unwrap();
        std::fs::write(dir.join("proc/device-tree/ibm,partition-name"), "db-lpar\0").unwrap();
        assert_eq!(partition(&src).unwrap().name.as_deref(), Some("db-lpar"));
        // Bytes that are not UTF-8 are kept, each one apart.
        std::fs::write(
            dir.join("proc/device-tree/ibm,partition-name"),
            b"db\xff\xfe\0",
        )
        .unwrap();
        let name = partition(&src).unwrap().name.unwrap();
        assert_eq!(osname::to_bytes(&name).as_ref(), b"db\xff\xfe");
        std::fs::write(
            dir.join("proc/ppc64/lparcfg"),
            b"serial_number=IBM,02\xff\npartition_id=1\xfe\n",
        )
        .unwrap();
        assert_eq!(
            partition(&src).unwrap_err(),
            "/proc/ppc64/lparcfg: partition_id=\"1\\xfe\" is not a number"
        );
        std::fs::write(
            dir.join("proc/ppc64/lparcfg"),
            b"serial_number=IBM,02\xff\npartition_id=12\n",
        )
        .unwrap();
        let serial = partition(&src).unwrap().system_serial.unwrap();
        assert_eq!(osname::to_bytes(&serial).as_ref(), b"IBM,02\xff");
        std::fs::remove_file(dir.join("proc/ppc64/lparcfg")).unwrap();
        let enoent = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            partition(&src).unwrap_err(),
            format!(
                "cannot read the partition identity (/proc/powerpc/lparcfg: {enoent}; \
                 /proc/ppc64/lparcfg: {enoent}); trace needs a pseries LPAR"
            )
        );
        assert_eq!(timebase_hz(&src).unwrap(), 512_000_000);
        std::fs::write(dir.join("proc/cpuinfo"), "processor : 0\n").unwrap();
        assert!(timebase_hz(&src).unwrap_err().contains("no timebase"));
    }
}
