//! Discovery of CXL PMUs under `/sys/bus/event_source/devices/cxl_pmu_*`
//! and of the memory device each belongs to, through the CXL bus device
//! `/sys/bus/cxl/devices/pmu_memX.Y` and its parent (the PCI function).
//!
//! Every read goes through a [`Source`], so `--sysroot`, `--record` and
//! `--replay` work.

use crate::common::cpulist::CpuList;
use crate::common::excerpt::excerpt;
use crate::common::natural::natural_order;
use crate::common::osname;
use crate::common::source::Source;

use super::error::CxlError;
use super::events::{Term, parse_event_file};
use super::format::{Field, Format};

/// Where perf PMUs are registered.
pub const EVENT_SOURCE_DIR: &str = "/sys/bus/event_source/devices";
/// Where CXL bus devices are.
pub const CXL_BUS_DIR: &str = "/sys/bus/cxl/devices";
/// The name prefix of CXL PMUs.
pub const PMU_PREFIX: &str = "cxl_pmu_";

/// A named event from a PMU's `events/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuEvent {
    /// File name.
    pub name: String,
    /// Its terms (for cxl_pmu a single `config=0x...`).
    pub terms: Vec<Term>,
}

/// The CXL memory device a PMU belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memdev {
    /// `memX`, when found on the CXL bus.
    pub name: Option<String>,
    /// The parent PCI function, e.g. `0000:35:00.0`.
    pub pci_address: Option<String>,
    /// NUMA node of the PCI function (or of the memdev), when not -1.
    pub numa_node: Option<i64>,
    /// The memdev's serial number as the kernel prints it.
    pub serial: Option<String>,
}

/// One CXL PMU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmu {
    /// `cxl_pmu_memX.Y`.
    pub name: String,
    /// Its perf type number (`type`).
    pub perf_type: u32,
    /// The CPU its events count on (`cpumask`).
    pub cpu: u32,
    /// Its `format/` fields.
    pub format: Format,
    /// Its named events, sorted by name.
    pub events: Vec<PmuEvent>,
    /// Its memory device, when the CXL bus device was found.
    pub memdev: Option<Memdev>,
}

impl Pmu {
    /// True when the HDM decoder filter is offered (its format fields exist).
    pub fn has_hdm_filter(&self) -> bool {
        self.format.field("hdm_filter_en").is_some() && self.format.field("hdm").is_some()
    }

    /// The named event called `name`.
    pub fn event(&self, name: &str) -> Option<&PmuEvent> {
        self.events.iter().find(|e| e.name == name)
    }

    fn path(&self, rest: &str) -> String {
        format!("{EVENT_SOURCE_DIR}/{}/{rest}", self.name)
    }
}

/// The CXL PMUs of a system.
pub struct Discovery {
    /// Those whose sysfs files were read, sorted by name.
    pub pmus: Vec<Pmu>,
    /// Those whose files could not be read or made no sense (a device
    /// being removed, a file the kernel would not write), each with why,
    /// sorted by name: as perf does, the others are used without them.
    pub unreadable: Vec<(String, CxlError)>,
}

impl Discovery {
    /// Takes out why `name` could not be read, if it is one of the unreadable.
    pub fn take_reason(&mut self, name: &str) -> Option<CxlError> {
        let index = self.unreadable.iter().position(|(n, _)| n == name)?;
        Some(self.unreadable.remove(index).1)
    }

    /// As [`Discovery::take_reason`], for the PMU of a `PMU/.../`
    /// specification: when `name` is no PMU's and no readable PMU is
    /// numbered after it ([`numbered_after`]), why the first unreadable one
    /// so numbered could not be read.
    pub fn take_spec_reason(&mut self, name: &str) -> Option<CxlError> {
        if let Some(why) = self.take_reason(name) {
            return Some(why);
        }
        let readable = |n: &str| n == name || numbered_after(name, n);
        if self.pmus.iter().any(|p| readable(&p.name)) {
            return None;
        }
        let index = self
            .unreadable
            .iter()
            .position(|(n, _)| numbered_after(name, n))?;
        Some(self.unreadable.remove(index).1)
    }
}

/// Whether PMU `pmu` is one a `PMU/.../` specification names as `name` when
/// no PMU has that name, as perf 6.1 takes it (`perf_pmu__valid_suffix`):
/// `pmu` is `name` followed by digits, or by `_` and digits
/// (`cxl_pmu_mem0.` names `cxl_pmu_mem0.1`).
pub fn numbered_after(name: &str, pmu: &str) -> bool {
    let Some(rest) = pmu.strip_prefix(name) else {
        return false;
    };
    let digits = rest.strip_prefix('_').unwrap_or(rest);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Finds every CXL PMU. No PMU at all is not an error here; only an
/// event-source directory that cannot be listed is.
pub fn discover(source: &dyn Source) -> Result<Discovery, CxlError> {
    let names = match source.list_dir(EVENT_SOURCE_DIR) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(CxlError::sysfs(EVENT_SOURCE_DIR, e)),
    };
    let mut names: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with(PMU_PREFIX))
        .collect();
    // cxl_pmu_mem2.0 before cxl_pmu_mem10.0 on a machine with 11 memdevs.
    names.sort_by(|a, b| natural_order(a, b));
    let mut found = Discovery {
        pmus: Vec::with_capacity(names.len()),
        unreadable: Vec::new(),
    };
    for name in names {
        match read_pmu(source, &name) {
            Ok(pmu) => found.pmus.push(pmu),
            Err(e) => found.unreadable.push((name, e)),
        }
    }
    Ok(found)
}

fn read_pmu(source: &dyn Source, name: &str) -> Result<Pmu, CxlError> {
    let dir = format!("{EVENT_SOURCE_DIR}/{name}");
    let type_path = format!("{dir}/type");
    let type_text = read_trimmed(source, &type_path)?;
    let perf_type = type_text.parse::<u32>().map_err(|_| {
        let found = excerpt(&type_text);
        CxlError::bad_file(
            &type_path,
            &format!("expected a PMU type number, found {found}"),
        )
    })?;
    let cpumask_path = format!("{dir}/cpumask");
    let cpumask = read_trimmed(source, &cpumask_path)?;
    let cpu = first_cpu(&cpumask).ok_or_else(|| {
        let found = excerpt(&cpumask);
        let problem = format!("expected a CPU list such as 0 or 2-3, found {found}");
        CxlError::bad_file(&cpumask_path, &problem)
    })?;
    let mut pmu = Pmu {
        name: name.to_string(),
        perf_type,
        cpu,
        format: Format::default(),
        events: Vec::new(),
        memdev: None,
    };
    pmu.format = read_format(source, &pmu.path("format"))?;
    pmu.events = read_events(source, &pmu.path("events"))?;
    pmu.memdev = find_memdev(source, name);
    Ok(pmu)
}

fn read_trimmed(source: &dyn Source, path: &str) -> Result<String, CxlError> {
    source
        .read_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| CxlError::sysfs(path, e))
}

/// The first CPU of a kernel CPU list (`0`, `2-3`, `1,4`).
pub fn first_cpu(list: &str) -> Option<u32> {
    CpuList::parse(list.trim()).ok()?.cpus().first().copied()
}

fn sorted_listing(source: &dyn Source, dir: &str) -> Result<Vec<String>, CxlError> {
    let mut names = match source.list_dir(dir) {
        Ok(names) => names,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(CxlError::sysfs(dir, e)),
    };
    names.sort();
    Ok(names)
}

fn read_format(source: &dyn Source, dir: &str) -> Result<Format, CxlError> {
    let mut fields = Vec::new();
    for name in sorted_listing(source, dir)? {
        let path = format!("{dir}/{name}");
        let text = read_trimmed(source, &path)?;
        fields.push(
            Field::parse(&name, &text).map_err(|e| CxlError::bad_file(&path, &e.to_string()))?,
        );
    }
    Ok(Format { fields })
}

fn read_events(source: &dyn Source, dir: &str) -> Result<Vec<PmuEvent>, CxlError> {
    let mut events = Vec::new();
    for name in sorted_listing(source, dir)? {
        // perf's companion files (`NAME.scale`, `NAME.unit`) are not events.
        if name.contains('.') {
            continue;
        }
        let path = format!("{dir}/{name}");
        let text = read_trimmed(source, &path)?;
        let terms = parse_event_file(&text).map_err(|e| CxlError::bad_file(&path, &e))?;
        events.push(PmuEvent { name, terms });
    }
    Ok(events)
}

/// Follows `/sys/bus/cxl/devices/pmu_memX.Y` to its parent PCI function and
/// the `memX` device beside it. Missing pieces stay `None`.
fn find_memdev(source: &dyn Source, pmu_name: &str) -> Option<Memdev> {
    let bus_name = pmu_name.strip_prefix("cxl_")?;
    let real = source
        .canonicalize(&format!("{CXL_BUS_DIR}/{bus_name}"))
        .ok()?;
    let parent = real.rsplit_once('/').map(|(p, _)| p.to_string())?;
    let parent_name = parent.rsplit('/').next().unwrap_or_default();
    let pci_address = looks_like_pci_address(parent_name).then(|| parent_name.to_string());
    let memdev_name = sorted_listing(source, &parent)
        .ok()
        .and_then(|names| names.into_iter().find(|n| is_memdev_name(n)))
        .or_else(|| {
            let id = bus_name.strip_prefix("pmu_mem")?.split('.').next()?;
            let name = format!("mem{id}");
            source
                .is_dir(&format!("{CXL_BUS_DIR}/{name}"))
                .then_some(name)
        });
    // Every byte of the file is kept (a serial number that is not UTF-8 is
    // shown as its bytes, not as no serial) and shown as the file holds it.
    let read = |path: String| {
        let bytes = source.read(&path).ok()?;
        Some(osname::from_bytes(&bytes).trim().to_string())
    };
    let node = |text: Option<String>| text?.parse::<i64>().ok().filter(|&n| n >= 0);
    let memdev_attr = |attr: &str| {
        let name = memdev_name.as_ref()?;
        read(format!("{CXL_BUS_DIR}/{name}/{attr}"))
    };
    let numa_node =
        node(read(format!("{parent}/numa_node"))).or_else(|| node(memdev_attr("numa_node")));
    Some(Memdev {
        serial: memdev_attr("serial"),
        name: memdev_name,
        pci_address,
        numa_node,
    })
}

fn is_memdev_name(name: &str) -> bool {
    name.strip_prefix("mem")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
}

/// `dddd:bb:dd.f` in hexadecimal.
fn looks_like_pci_address(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() == 12
        && bytes[4] == b':'
        && bytes[7] == b':'
        && bytes[10] == b'.'
        && name
            .bytes()
            .enumerate()
            .all(|(i, b)| matches!(i, 4 | 7 | 10) || b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_pci_addresses() {
        assert_eq!(first_cpu("0\n"), Some(0));
        assert_eq!(first_cpu("2-3"), Some(2));
        assert_eq!(first_cpu("5,7"), Some(5));
        assert_eq!(first_cpu(""), None);
        assert!(looks_like_pci_address("0000:35:00.0"));
        assert!(!looks_like_pci_address("pci0000:34"));
        assert!(is_memdev_name("mem12"));
        assert!(!is_memdev_name("memory"));
    }
}
