//! The partition and clock identity a recording carries: `partition_id`
//! from lparcfg, the time-base frequency from /proc/cpuinfo.

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

/// Reads `partition_id` (and the partition name, if lparcfg has one).
pub fn partition(source: &dyn Source) -> Result<(u32, Option<String>), String> {
    let mut last_error = String::new();
    for path in LPARCFG {
        match source.read_string(path) {
            Ok(text) => {
                let id = lparcfg_value(&text, "partition_id").ok_or_else(|| {
                    format!("{path}: no partition_id= line (is this a pseries LPAR?)")
                })?;
                let id = id
                    .parse::<u32>()
                    .map_err(|_| format!("{path}: partition_id={id:?} is not a number"))?;
                let name = lparcfg_value(&text, "partition_name").map(str::to_string);
                return Ok((id, name));
            }
            Err(e) => last_error = format!("{path}: {e}"),
        }
    }
    Err(format!(
        "cannot read the partition identity ({last_error}); trace needs a pseries LPAR"
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
        let dir = std::env::temp_dir().join(format!("hwstat-ident-{}", std::process::id()));
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
        assert_eq!(partition(&src).unwrap(), (12, None));
        assert_eq!(timebase_hz(&src).unwrap(), 512_000_000);
        std::fs::write(dir.join("proc/cpuinfo"), "processor : 0\n").unwrap();
        assert!(timebase_hz(&src).unwrap_err().contains("no timebase"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
