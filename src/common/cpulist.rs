//! CPU lists as the kernel writes them (`0-3,8,10-11`): `cpumask` and
//! `online` files, topology files and `--cpus` arguments.

/// A set of CPU numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    cpus: Vec<u32>,
}

impl CpuList {
    /// Parses `0-3,8,10-11`. Fails with a message naming the bad part.
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let bad = |part: &str| {
            format!(
                "invalid CPU list {text:?} at {part:?}: expected CPU numbers and ranges like 0-3,8"
            )
        };
        let mut cpus = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let first: u32 = first.parse().map_err(|_| bad(part))?;
            let last: u32 = last.parse().map_err(|_| bad(part))?;
            if last < first || last - first > 1 << 20 {
                return Err(bad(part));
            }
            cpus.extend(first..=last);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList { cpus })
    }

    /// Whether `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.cpus.binary_search(&cpu).is_ok()
    }

    /// The CPUs, ascending.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    /// The CPUs, ascending, as an owned vector.
    pub fn into_vec(self) -> Vec<u32> {
        self.cpus
    }
}

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<CpuList, String> {
        CpuList::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_single_cpus() {
        let list = CpuList::parse("8,0-2, 10-11,1").unwrap();
        assert_eq!(list.cpus(), &[0, 1, 2, 8, 10, 11]);
        assert!(list.contains(10));
        assert!(!list.contains(3));
    }

    #[test]
    fn refuses_bad_lists() {
        for bad in ["", "a", "3-1", "1,,2", "-1", "0-99999999"] {
            let err = CpuList::parse(bad).unwrap_err();
            assert!(err.contains("expected CPU numbers"), "{bad}: {err}");
        }
    }
}
