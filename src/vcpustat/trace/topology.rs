//! Which chip and node each physical processor belongs to.
//!
//! The DTL names physical processors by number only; a partition cannot ask
//! the hypervisor for their chip and node. The report therefore takes the
//! machine's layout from a small text file (`--topology FILE`), one line per
//! group of processors: `PROCESSORS chip=C node=N`, where PROCESSORS is a
//! list such as `0-31` or `0-7,64-71`; `#` starts a comment.

use crate::common::cpulist::CpuList;
use crate::common::excerpt::excerpt;

/// Where a physical processor sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Chip number.
    pub chip: u32,
    /// NUMA node number.
    pub node: u32,
}

/// The layout of the machine's physical processors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Topology {
    /// Indexed by processor number (a lookup per dispatch must be cheap).
    places: Vec<Option<Place>>,
}

impl Topology {
    /// Parses the topology text; `name` appears in errors.
    pub fn parse(name: &str, text: &str) -> Result<Topology, String> {
        let mut places: Vec<Option<Place>> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad =
                |what: &str| format!("{name}:{}: {what} (expected \"0-7 chip=0 node=0\")", n + 1);
            let mut words = line.split_whitespace();
            let procs = CpuList::parse_file_text(words.next().unwrap_or(""))
                .map_err(|e| bad(&e))?
                .into_vec();
            let (mut chip, mut node) = (None, None);
            for word in words {
                let (key, value) = word
                    .split_once('=')
                    .ok_or_else(|| bad(&format!("{} is not key=value", excerpt(word))))?;
                let value: u32 = value.parse().map_err(|_| {
                    let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
                    bad(&match digits {
                        true => format!("{key}={} is above {}", excerpt(value), u32::MAX),
                        false => format!("{} is not a number", excerpt(value)),
                    })
                })?;
                let slot = match key {
                    "chip" => &mut chip,
                    "node" => &mut node,
                    _ => return Err(bad(&format!("unknown key {key:?}"))),
                };
                if slot.replace(value).is_some() {
                    return Err(bad(&format!("{key}= is given twice")));
                }
            }
            let place = Place {
                chip: chip.ok_or_else(|| bad("chip= is missing"))?,
                node: node.ok_or_else(|| bad("node= is missing"))?,
            };
            for p in procs {
                let p =
                    u16::try_from(p).map_err(|_| bad(&format!("processor {p} is above 65535")))?;
                let p = usize::from(p);
                if places.len() <= p {
                    places.resize(p + 1, None);
                }
                if places[p].replace(place).is_some() {
                    return Err(bad(&format!("processor {p} is listed twice")));
                }
            }
        }
        Ok(Topology { places })
    }

    /// Whether no processor is described.
    pub fn is_empty(&self) -> bool {
        self.places.iter().all(Option::is_none)
    }

    /// The place of a processor, if the topology names it.
    pub fn place(&self, processor: u16) -> Option<Place> {
        self.places.get(usize::from(processor)).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groups_and_refuses_overlaps() {
        let t =
            Topology::parse("t", "# two chips\n0-3 chip=0 node=0\n4-7 chip=1 node=1\n").unwrap();
        assert_eq!(t.place(5), Some(Place { chip: 1, node: 1 }));
        assert_eq!(t.place(8), None);
        let err = Topology::parse("t", "0-3 chip=0 node=0\n3 chip=1 node=0\n").unwrap_err();
        assert_eq!(
            err,
            "t:2: processor 3 is listed twice (expected \"0-7 chip=0 node=0\")"
        );
        assert!(
            Topology::parse("t", "0-3 chip=0\n")
                .unwrap_err()
                .contains("node= is missing")
        );
        assert_eq!(
            Topology::parse("t", "0-3 chip=0 chip=1 node=0\n").unwrap_err(),
            "t:1: chip= is given twice (expected \"0-7 chip=0 node=0\")"
        );
        // A number too large is not "not a number"; what is quoted is
        // escaped and cut short.
        assert_eq!(
            Topology::parse("t", "0 chip=0 node=18446744073709551615\n").unwrap_err(),
            "t:1: node=\"18446744073709551615\" is above 4294967295 (expected \"0-7 chip=0 \
             node=0\")"
        );
        assert_eq!(
            Topology::parse("t", "0 chip=\u{1b}[2J node=0\n").unwrap_err(),
            "t:1: \"\\x1b[2J\" is not a number (expected \"0-7 chip=0 node=0\")"
        );
    }

    #[test]
    fn a_character_of_the_file_is_quoted_as_its_bytes() {
        // U+10FF41 in a file is four bytes, not the byte 0x41 it would
        // carry in a device name or an argument.
        let err = Topology::parse("t", "1,\u{10ff41} chip=0 node=0\n").unwrap_err();
        assert!(err.contains(r#"at "\xf4\x8f\xbd\x81""#), "{err}");
    }
}
