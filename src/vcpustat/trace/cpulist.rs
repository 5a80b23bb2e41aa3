//! CPU lists as the kernel writes them: `0-3,8,10-11`.

/// Parses a CPU list into sorted, distinct numbers. Refuses empty items,
/// reversed ranges and anything that is not a number, naming what was wrong.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for item in text.trim().split(',') {
        let item = item.trim();
        let number = |s: &str| {
            s.trim().parse::<u32>().map_err(|_| {
                format!(
                    "invalid CPU list {text:?}: {s:?} is not a CPU number (expected e.g. 0-3,8)"
                )
            })
        };
        match item.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!(
                        "invalid CPU list {text:?}: range {item:?} is reversed"
                    ));
                }
                if hi - lo > 65_535 {
                    return Err(format!(
                        "invalid CPU list {text:?}: range {item:?} is too large"
                    ));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(number(item)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A parsed CPU list, as a command-line value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<CpuList, String> {
        parse_cpu_list(text).map(CpuList)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_single_cpus() {
        assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
        assert_eq!(parse_cpu_list(" 5 , 2,2").unwrap(), vec![2, 5]);
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("1,,2").is_err());
    }
}
