//! Resolution against the fixture tree through the library: named events and
//! their raw vid/gid/mask agree, terms override, several ranges work.

use crate::cxlstat_support;

use hwstat::common::source::RootFs;
use hwstat::cxlstat::format::ConfigWord;
use hwstat::cxlstat::resolve::{Plan, resolve, select_pmus};
use hwstat::cxlstat::spec::parse_event_args;
use hwstat::cxlstat::sysfs::{Pmu, discover};

fn fixture() -> Vec<Pmu> {
    discover(&RootFs::new(cxlstat_support::two_memdevs()))
        .unwrap()
        .pmus
}

fn plan(pmus: &[Pmu], specs: &[&str]) -> Plan {
    try_plan(pmus, specs).unwrap()
}

/// The plan of `specs` on every PMU, or the resolution's error.
fn try_plan(pmus: &[Pmu], specs: &[&str]) -> Result<Plan, String> {
    let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    let all = select_pmus(pmus, &[]).unwrap();
    resolve(pmus, &parse_event_args(&specs).unwrap(), &all).map_err(|e| e.to_string())
}

fn configs(plan: &Plan) -> Vec<(String, u64, u64, u64)> {
    plan.events()
        .map(|e| {
            (
                e.label.clone(),
                e.attr.word(ConfigWord::Config),
                e.attr.word(ConfigWord::Config1),
                e.attr.word(ConfigWord::Config2),
            )
        })
        .collect()
}

#[test]
fn discovery_reads_types_cpus_formats_and_memdevs() {
    let pmus = fixture();
    let names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["cxl_pmu_mem0.0", "cxl_pmu_mem1.0"]);
    assert_eq!((pmus[0].perf_type, pmus[0].cpu), (14, 0));
    assert_eq!((pmus[1].perf_type, pmus[1].cpu), (15, 1));
    assert!(pmus[0].has_hdm_filter());
    assert!(!pmus[1].has_hdm_filter());
    let dev = pmus[1].memdev.clone().unwrap();
    assert_eq!(dev.name.as_deref(), Some("mem1"));
    assert_eq!(dev.pci_address.as_deref(), Some("0000:b5:00.0"));
    assert_eq!(dev.numa_node, Some(1));
    assert_eq!(dev.serial.as_deref(), Some("0x4d2a00002"));
}

#[test]
fn a_named_event_and_its_raw_terms_resolve_to_the_same_config() {
    let pmus = fixture();
    // d2h_req_rdshared: vid 0x1e98, gid 0x10, mask bit 3 (drivers/perf/cxl_pmu.c).
    let p = plan(
        &pmus,
        &[
            "cxl_pmu_mem0.0/d2h_req_rdshared/",
            "cxl_pmu_mem0.0/vid=0x1e98,gid=0x10,mask=0x8/",
            "cxl_pmu_mem0.0/config=0x1e98001000000008/",
        ],
    );
    let c = configs(&p);
    assert_eq!(c[0].1, 0x1e98_0010_0000_0008);
    assert_eq!(c[1].1, c[0].1);
    assert_eq!(c[2].1, c[0].1);
    // Unqualified raw terms go to every CXL PMU with that PMU's type.
    let p = plan(&pmus, &["vid=0x1e98,gid=0x0,mask=1", "clock_ticks"]);
    let attrs: Vec<(u32, u64)> = p
        .events()
        .map(|e| (e.attr.perf_type, e.attr.word(ConfigWord::Config)))
        .collect();
    assert_eq!(
        attrs,
        [
            (14, 0x1e98_0000_0000_0001),
            (15, 0x1e98_0000_0000_0001),
            (14, 0x1e98_0000_0000_0001),
            (15, 0x1e98_0000_0000_0001)
        ]
    );
}

#[test]
fn terms_override_the_event_file_and_set_modifiers() {
    let pmus = fixture();
    let p = plan(
        &pmus,
        &[
            "cxl_pmu_mem0.0/d2h_req_rdshared,mask=0x3e/",
            "cxl_pmu_mem0.0/d2h_req_rdshared,threshold=1,edge,invert=1/",
            "cxl_pmu_mem0.0/m2s_req_memrd,hdm_filter_en=1,hdm=0xffff/",
        ],
    );
    let c = configs(&p);
    // All D2H reads: mask bits 1-5 replace the single bit 3.
    assert_eq!(c[0].1, 0x1e98_0010_0000_003e);
    // threshold in bits 0-15, invert bit 16, edge bit 17.
    assert_eq!(c[1].2, 0x3_0001);
    assert_eq!((c[2].2, c[2].3), (1 << 18, 0xffff));
}

#[test]
fn a_named_event_goes_only_where_it_is_offered_and_pmu_narrows() {
    let pmus = fixture();
    let p = plan(&pmus, &["d2h_req_rdshared,ddr_refresh"]);
    let on: Vec<(&str, &str)> = p
        .events()
        .map(|e| (pmus[e.pmu].name.as_str(), e.label.as_str()))
        .collect();
    assert_eq!(
        on,
        [
            ("cxl_pmu_mem0.0", "d2h_req_rdshared"),
            ("cxl_pmu_mem1.0", "ddr_refresh")
        ]
    );
    let only1 = select_pmus(&pmus, &["cxl_pmu_mem1.0".to_string()]).unwrap();
    let specs = parse_event_args(&["clock_ticks".to_string()]).unwrap();
    let p = resolve(&pmus, &specs, &only1).unwrap();
    assert_eq!(p.units.len(), 1);
    assert_eq!(p.units[0].pmu, 1);
}

#[test]
fn groups_become_one_perf_group_per_pmu() {
    let pmus = fixture();
    let p = plan(&pmus, &["{clock_ticks,m2s_req_memrd}", "ddr_act"]);
    let units: Vec<(usize, bool, usize)> = p
        .units
        .iter()
        .map(|u| (u.pmu, u.grouped, u.events.len()))
        .collect();
    assert_eq!(
        units,
        [(0, true, 2), (1, true, 2), (0, false, 1), (1, false, 1)]
    );
    assert_eq!(p.spec_labels, ["clock_ticks", "m2s_req_memrd", "ddr_act"]);
}

#[test]
fn multi_range_formats_from_sysfs() {
    let root = cxlstat_support::scratch("multirange");
    cxlstat_support::software_tree(&root, &[("cxl_pmu_mem0.0", 0)]);
    let dir = root.join("sys/devices/virtual/cxl_pmu_mem0.0");
    std::fs::write(dir.join("format/split"), "config2:0-3,60-63\n").unwrap();
    std::fs::write(dir.join("events/split_event"), "config=0x5,split=0x9c\n").unwrap();
    // Listed high range first: perf still fills the bits from the lowest up.
    std::fs::write(dir.join("format/backwards"), "config1:60-63,0-3\n").unwrap();
    // A bare flag in an events file is 1, as perf reads it.
    std::fs::write(dir.join("events/flagged"), "config=0x7,backwards\n").unwrap();
    let pmus = discover(&RootFs::new(root.to_path_buf())).unwrap().pmus;
    let p = plan(
        &pmus,
        &[
            "split_event",
            "cxl_pmu_mem0.0/split_event,split=0xff/",
            "cxl_pmu_mem0.0/config=1,backwards=0x9c/",
            "flagged",
        ],
    );
    let c = configs(&p);
    // 0x9c: low nibble 0xc in bits 0-3, high nibble 0x9 in bits 60-63.
    assert_eq!((c[0].1, c[0].3), (5, 0x9000_0000_0000_000c));
    assert_eq!(c[1].3, 0xf000_0000_0000_000f);
    assert_eq!(c[2].2, 0x9000_0000_0000_000c);
    assert_eq!((c[3].1, c[3].2), (7, 1));
    let specs = parse_event_args(&["cxl_pmu_mem0.0/split_event,split=0x100/".to_string()]).unwrap();
    let err = resolve(&pmus, &specs, &[0]).unwrap_err().to_string();
    assert!(err.contains("too wide for split (8 bits"), "{err}");
}

#[test]
fn config_words_come_first_and_fields_go_over_them_as_in_perf() {
    let pmus = fixture();
    // perf 6.1 (`perf stat -vv`, this fixture bound over /sys) gives these
    // words; a field written before a word is not lost to it.
    let p = plan(
        &pmus,
        &[
            "cxl_pmu_mem1.0/invert,config1=0x3817,config2=0x10,m2s_rwd_memwrptl/",
            "cxl_pmu_mem0.0/vid=0x19e5,hdm=255,gid=0,mask=2,config2=0x10,invert/",
            "cxl_pmu_mem0.0/clock_ticks,config=0x5/",
        ],
    );
    let c = configs(&p);
    assert_eq!((c[0].2, c[0].3), (0x1_3817, 0x10));
    assert_eq!(
        (c[1].1, c[1].2, c[1].3),
        (0x19e5_0000_0000_0002, 0x1_0000, 0xff)
    );
    // A word replaces the event file's word, as the user's terms come later.
    assert_eq!(c[2].1, 0x5);
}

/// The error of resolving `spec` on every PMU of the fixture.
fn refusal(pmus: &[Pmu], spec: &str) -> String {
    let specs = parse_event_args(&[spec.to_string()]).unwrap();
    let all = select_pmus(pmus, &[]).unwrap();
    match resolve(pmus, &specs, &all) {
        Ok(_) => panic!("{spec}: accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bare_words_are_events_or_flags_as_in_perf() {
    let pmus = fixture();
    // Beside an event, a bare word the PMU lacks is an unknown term (perf:
    // "unknown term 'edg' for pmu"), not a second event name.
    let err = refusal(&pmus, "cxl_pmu_mem0.0/clock_ticks,edg/");
    assert!(
        err.starts_with("unknown term \"edg\" for cxl_pmu_mem0.0; valid terms: edge,"),
        "{err}"
    );
    // cxl_pmu_mem1.0 has no HDM filter, so no hdm_filter_en.
    let err = refusal(&pmus, "cxl_pmu_mem1.0/clock_ticks,hdm_filter_en,hdm=3/");
    assert!(
        err.starts_with("unknown term \"hdm_filter_en\" for cxl_pmu_mem1.0"),
        "{err}"
    );
    let err = refusal(&pmus, "cxl_pmu_mem0.0/clock_ticks,ddr_act/");
    assert!(err.ends_with("more than one event name"), "{err}");
    // Without a PMU a bare word names an event: a format term there is not
    // taken as the flag it is inside PMU/.../ (perf: a parser error).
    for spec in ["mask", "config", "vid=0x1e98,gid=0,mask=1,edge"] {
        let err = refusal(&pmus, spec);
        let word = spec.rsplit(',').next().unwrap();
        assert_eq!(
            err,
            format!(
                "{word}: a term of the PMUs' format/, not an event; in a list without a PMU \
                 give it a value ({word}=1), or put it in PMU/.../"
            )
        );
    }
    // Inside PMU/.../ it is the flag, 1, as in perf.
    let p = plan(
        &pmus,
        &["cxl_pmu_mem0.0/mask/", "vid=0x1e98,gid=0,mask=1,edge=1"],
    );
    let c = configs(&p);
    assert_eq!(c[0].1, 1);
    assert_eq!(c[1].2 & (1 << 17), 1 << 17, "{c:?}");
}

/// Filter terms alone, or nothing at all between the slashes, select no
/// event: refused with that reason (perf opens config 0, which no CXL
/// counter counts).
#[test]
fn a_specification_without_an_event_is_refused_with_the_reason() {
    let pmus = fixture();
    for (spec, shown) in [
        ("cxl_pmu_mem0.0/invert/", "cxl_pmu_mem0.0/invert/"),
        ("threshold=2", "cxl_pmu_mem0.0/threshold=2/"),
        ("cxl_pmu_mem0.0//", "cxl_pmu_mem0.0//"),
        ("cxl_pmu_mem0.0/ /", "cxl_pmu_mem0.0//"),
        // The terms as written, not the name= given.
        (
            "cxl_pmu_mem0.0/name=clock_ticks/",
            "cxl_pmu_mem0.0/name=clock_ticks/",
        ),
        (
            "cxl_pmu_mem0.0/threshold=3,name=x/",
            "cxl_pmu_mem0.0/threshold=3,name=x/",
        ),
    ] {
        assert_eq!(
            refusal(&pmus, spec),
            format!(
                "{shown}: no event selected; give an event name, or vid=,gid=,mask= (or config=)"
            ),
            "{spec}"
        );
    }
}

/// `PMU/.../` names one PMU, or, as in perf 6.1, every PMU whose name goes
/// on from it with digits (or `_` and digits) when none has the name itself.
#[test]
fn a_pmu_name_cut_before_its_number_names_every_pmu_numbered_so() {
    let dir = cxlstat_support::scratch("resolve-numbered");
    cxlstat_support::software_tree(
        &dir,
        &[
            ("cxl_pmu_mem0.0", 0),
            ("cxl_pmu_mem0.1", 0),
            ("cxl_pmu_mem1.0", 0),
            ("cxl_pmu_mem10.0", 0),
            ("cxl_pmu_mem2_7", 0),
        ],
    );
    let pmus = discover(&RootFs::new(&*dir)).unwrap().pmus;
    let on = |spec: &str| -> Result<Vec<&str>, String> {
        let plan = try_plan(&pmus, &[spec])?;
        assert!(plan.events().all(|e| e.qualified), "{spec}");
        Ok(plan.events().map(|e| pmus[e.pmu].name.as_str()).collect())
    };
    let mut both = on("cxl_pmu_mem0./cpu_clock/").unwrap();
    both.sort_unstable();
    assert_eq!(both, ["cxl_pmu_mem0.0", "cxl_pmu_mem0.1"]);
    assert_eq!(on("cxl_pmu_mem1./cpu_clock/").unwrap(), ["cxl_pmu_mem1.0"]);
    assert_eq!(on("cxl_pmu_mem0.1/cpu_clock/").unwrap(), ["cxl_pmu_mem0.1"]);
    assert_eq!(on("cxl_pmu_mem2/cpu_clock/").unwrap(), ["cxl_pmu_mem2_7"]);
    assert_eq!(on("cxl_pmu_mem2_/cpu_clock/").unwrap(), ["cxl_pmu_mem2_7"]);
    // What follows must be digits: "0.0" is not, and the name is not a
    // pattern.
    for spec in [
        "cxl_pmu_mem/cpu_clock/",
        "cxl_pmu_mem0/cpu_clock/",
        "cxl_pmu_mem?.0/cpu_clock/",
        "cxl_pmu_mem*/cpu_clock/",
    ] {
        let err = on(spec).unwrap_err();
        assert!(err.starts_with("unknown CXL PMU"), "{spec}: {err}");
    }
    // An event's name where the PMU's goes is named as such.
    let err = on("cpu_clock/edge/").unwrap_err();
    assert!(
        err.starts_with("\"cpu_clock\" is an event, not a PMU"),
        "{err}"
    );
    // An event none of them has: where it was looked for.
    let err = on("cxl_pmu_mem0./cpu_clok/").unwrap_err();
    assert!(
        err.starts_with(
            "unknown event \"cpu_clok\" on cxl_pmu_mem0. (cxl_pmu_mem0.0, cxl_pmu_mem0.1)"
        ),
        "{err}"
    );
}

/// perf's raw term in `PMU/.../`: `rHEX` sets `config` in its place among
/// the whole words, unless the PMU has an event of that name (perf 6.1 gave
/// an event `rab` its own config where `rac` was 0xac).
#[test]
fn a_raw_term_sets_config_unless_an_event_has_its_name() {
    let dir = cxlstat_support::scratch("resolve-raw-term");
    cxlstat_support::software_tree(&dir, &[("cxl_pmu_mem0.0", 0), ("cxl_pmu_mem1.0", 0)]);
    let events = dir.join("sys/devices/virtual/cxl_pmu_mem0.0/events");
    std::fs::write(events.join("rab"), "config=0x3\n").unwrap();
    let pmus = discover(&RootFs::new(&*dir)).unwrap().pmus;
    let config = |spec: &str| configs(&plan(&pmus, &[spec]))[0].1;
    let error = |spec: &str| try_plan(&pmus, &[spec]).unwrap_err();
    assert_eq!(config("cxl_pmu_mem0.0/rac/"), 0xac);
    assert_eq!(config("cxl_pmu_mem0.0/rab/"), 0x3);
    // perf's lexer takes the name as an event's if any PMU has the event,
    // spelt exactly so: not raw on cxl_pmu_mem1.0, raw in another case.
    assert!(
        error("cxl_pmu_mem1.0/rab/").starts_with("unknown event \"rab\" on cxl_pmu_mem1.0"),
        "{}",
        error("cxl_pmu_mem1.0/rab/")
    );
    assert_eq!(config("cxl_pmu_mem0.0/rAB/"), 0xab);
    // An error names the word that is not raw, not the raw one.
    assert!(
        error("cxl_pmu_mem0.0/rc,bogus/").starts_with("unknown event \"bogus\""),
        "{}",
        error("cxl_pmu_mem0.0/rc,bogus/")
    );
    assert_eq!(config("cxl_pmu_mem0.0/cpu_clock,r7/"), 0x7);
    assert_eq!(config("cxl_pmu_mem0.0/r7,context_switches/"), 0x3);
    assert_eq!(config("cxl_pmu_mem0.0/r7,mask=0x10/"), 0x10);
    // Without a PMU, r7 is no CXL event (perf's raw core event).
    let err = error("r7");
    assert!(err.starts_with("unknown event \"r7\""), "{err}");
}
