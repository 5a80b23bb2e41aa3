//! Resolution of event specifications against the PMUs found: which PMUs
//! each event runs on and the `perf_event_attr` config words it gets.
//!
//! As in perf, whole config words (`config=`, `config1=`, ..., and the
//! `events/` file of a named event) are set first, in order, and the format
//! fields (`vid=`, `threshold`, ...) are then applied over them in order.
//! Where perf ORs a field into the bits already set (so `vid=1,vid=2` gives
//! 3, and a mask given after a named event adds to the event's mask), a
//! field here replaces its bits. Unset fields are 0.

use std::borrow::Cow;

use super::catalogue;
use super::error::CxlError;
use super::events::Term;
use super::format::{ConfigWord, EventAttr};
use super::spec::SpecGroup;
use super::suggest::closest;
use super::sysfs::{Pmu, PmuEvent, numbered_after};
use crate::common::excerpt::excerpt_arg;

/// One event on one PMU, ready to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEvent {
    /// Index of the PMU in the discovered list.
    pub pmu: usize,
    /// How the event is shown (the terms as written, or the `name=` given).
    pub label: String,
    /// True when `label` is a `name=` term's.
    pub named: bool,
    /// True when the specification named its PMU (`PMU/terms/`).
    pub qualified: bool,
    /// Index of the specification it came from (rows of the same index are
    /// summed by `--aggregate`).
    pub spec: usize,
    /// Type and config words.
    pub attr: EventAttr,
}

impl ResolvedEvent {
    /// The event as perf names it: the `name=` given, else `PMU/terms/`.
    pub fn perf_name(&self, pmu: &str) -> String {
        if self.named {
            self.label.clone()
        } else {
            format!("{pmu}/{}/", self.label)
        }
    }

    /// The event as `perf stat --no-merge` prints it: the `name=` given,
    /// `PMU/terms/` when the specification named the PMU, else the terms
    /// and the PMU in brackets (`clock_ticks [cxl_pmu_mem0.0]`).
    pub fn unmerged_name(&self, pmu: &str) -> String {
        if self.named || self.qualified {
            self.perf_name(pmu)
        } else {
            format!("{} [{pmu}]", self.label)
        }
    }
}

/// What is opened and read as one: a single event, or a group on one PMU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Index of the PMU.
    pub pmu: usize,
    /// True for a perf group (read with one `read()`).
    pub grouped: bool,
    /// The events; the first leads a group.
    pub events: Vec<ResolvedEvent>,
}

/// Every unit to open, in specification order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The units.
    pub units: Vec<Unit>,
    /// The label of each specification, by index.
    pub spec_labels: Vec<String>,
    /// The PMU each specification names as written (`PMU/.../`), by
    /// index; `None` for one without a PMU.
    pub spec_pmus: Vec<Option<String>>,
}

impl Plan {
    /// Every event, in unit order.
    pub fn events(&self) -> impl Iterator<Item = &ResolvedEvent> {
        self.units.iter().flat_map(|u| u.events.iter())
    }

    /// The first event shown twice on one PMU (the same label there): such
    /// rows cannot be told apart, and as Prometheus series they would be
    /// one series given twice.
    pub fn repeated_event(&self) -> Option<&ResolvedEvent> {
        // Ordered, not hashed: no random keys to fetch from the kernel.
        let mut seen = std::collections::BTreeSet::new();
        self.events()
            .find(|e| !seen.insert((e.pmu, e.label.as_str())))
    }
}

/// Checks `--pmu` names and gives the indexes of the PMUs that unqualified
/// events go to (every CXL PMU when none was chosen).
pub fn select_pmus(pmus: &[Pmu], chosen: &[String]) -> Result<Vec<usize>, CxlError> {
    if chosen.is_empty() {
        return Ok((0..pmus.len()).collect());
    }
    let mut selected: Vec<usize> = Vec::new();
    for name in chosen {
        let index = pmu_index(pmus, name)?;
        if !selected.contains(&index) {
            selected.push(index);
        }
    }
    Ok(selected)
}

/// The PMUs `PMU/.../` names, as perf 6.1 finds them: the PMU called
/// `name`, else every PMU whose name is `name` then digits, or `_` and
/// digits (`perf_pmu__valid_suffix`; `cxl_pmu_mem0./.../` is every PMU of
/// memdev 0). An event's name instead of a PMU's is refused with the
/// reason ([`event_as_pmu`]).
fn pmus_named(pmus: &[Pmu], name: &str) -> Result<Vec<usize>, CxlError> {
    let unknown = match pmu_index(pmus, name) {
        Ok(index) => return Ok(vec![index]),
        Err(unknown) => unknown,
    };
    let found: Vec<usize> = (0..pmus.len())
        .filter(|&i| numbered_after(name, &pmus[i].name))
        .collect();
    if found.is_empty() {
        return Err(event_as_pmu(pmus, name).unwrap_or(unknown));
    }
    Ok(found)
}

fn pmu_index(pmus: &[Pmu], name: &str) -> Result<usize, CxlError> {
    pmus.iter()
        .position(|p| p.name == name)
        .ok_or_else(|| CxlError::UnknownPmu {
            name: name.to_string(),
            suggestions: {
                let near = closest(name, pmus.iter().map(|p| p.name.as_str()));
                if near.is_empty() {
                    pmus.iter().map(|p| p.name.clone()).collect()
                } else {
                    near
                }
            },
        })
}

/// Why `EVENT/TERMS/` is refused, when the unknown PMU `name` is an event of
/// a PMU found. perf 6.1 counts it as the event with the terms on every PMU
/// that has it, and names it without the event (`cxl_pmu_mem0.0/edge/`
/// under `--no-merge`); cxlstat asks for the event's PMU to be written.
fn event_as_pmu(pmus: &[Pmu], name: &str) -> Option<CxlError> {
    let pmu = pmus.iter().find(|p| find_event(p, name).is_some())?;
    Some(CxlError::Spec(format!(
        "{} is an event, not a PMU: give it alone for every CXL PMU that has it, or with \
         its PMU and the terms ({}/{name},.../)",
        excerpt_arg(name),
        pmu.name
    )))
}

/// Resolves every specification. `selected` are the PMUs unqualified events go to.
pub fn resolve(pmus: &[Pmu], groups: &[SpecGroup], selected: &[usize]) -> Result<Plan, CxlError> {
    let mut plan = Plan::default();
    for group in groups {
        let mut resolved = Vec::new();
        for member in &group.members {
            let spec = plan.spec_labels.len();
            plan.spec_labels.push(member.label.clone());
            plan.spec_pmus.push(member.pmu.clone());
            let qualified = member.pmu.is_some();
            let targets = match member.pmu.as_deref() {
                Some(name) => pmus_named(pmus, name)?,
                None => selected.to_vec(),
            };
            let terms = match qualified {
                true => with_raw_terms(pmus, &member.terms),
                false => Cow::Borrowed(member.terms.as_slice()),
            };
            // A bare word without a PMU names an event, as in perf: `-e mask`
            // is not mask=1 on every PMU.
            let word = match (qualified, member.terms.as_slice()) {
                (false, [term]) if term.value.is_none() => Some(term.name.as_str()),
                _ => None,
            };
            let before = resolved.len();
            for &pmu in &targets {
                if word.is_some_and(|w| find_event(&pmus[pmu], w).is_none()) {
                    continue;
                }
                if let Some(attr) = resolve_on(&pmus[pmu], &terms, &member.written)? {
                    resolved.push(ResolvedEvent {
                        pmu,
                        label: member.label.clone(),
                        named: member.named,
                        qualified,
                        spec,
                        attr,
                    });
                }
            }
            if resolved.len() == before {
                if let Some(term) = word.filter(|&w| is_term_of(pmus, &targets, w)) {
                    return Err(term_without_value(term));
                }
                let name = targets
                    .first()
                    .and_then(|&pmu| event_name(&pmus[pmu], &terms))
                    .unwrap_or(&member.label);
                return Err(unknown_event(pmus, &targets, member.pmu.as_deref(), name));
            }
        }
        if group.grouped {
            let mut order: Vec<usize> = Vec::new();
            for event in &resolved {
                if !order.contains(&event.pmu) {
                    order.push(event.pmu);
                }
            }
            for pmu in order {
                plan.units.push(Unit {
                    pmu,
                    grouped: true,
                    events: resolved.iter().filter(|e| e.pmu == pmu).cloned().collect(),
                });
            }
        } else {
            plan.units.extend(resolved.into_iter().map(|event| Unit {
                pmu: event.pmu,
                grouped: false,
                events: vec![event],
            }));
        }
    }
    Ok(plan)
}

/// The largest threshold the cxl_pmu driver passes on: it reads `threshold`
/// into a `u8` and programs 8 bits of the counter configuration, although
/// the format advertises `config1:0-15`.
pub const DRIVER_THRESHOLD_MAX: u64 = 0xff;

/// The warnings of each specification the cxl_pmu driver would program
/// other than written: a `threshold` above the 8 bits it programs (naming
/// the event, the value and what the hardware gets), and an `hdm` decoder
/// without `hdm_filter_en`, which the driver then ignores.
pub fn driver_warnings(plan: &Plan, pmus: &[Pmu]) -> Vec<String> {
    let mut warnings = Vec::new();
    // The events of each specification, gathered in one pass (filtering all
    // events for each specification took seconds at 10,000 `-e`).
    let mut by_spec: Vec<Vec<&ResolvedEvent>> = vec![Vec::new(); plan.spec_labels.len()];
    for event in plan.events() {
        if let Some(events) = by_spec.get_mut(event.spec) {
            events.push(event);
        }
    }
    for (spec, (events, label)) in by_spec.iter().zip(&plan.spec_labels).enumerate() {
        let Some(first) = events.first() else {
            continue;
        };
        let one_pmu = events.iter().all(|e| e.pmu == first.pmu);
        let written = plan.spec_pmus.get(spec).and_then(Option::as_deref);
        let name = || match (one_pmu, written) {
            (true, _) => first.perf_name(&pmus[first.pmu].name),
            (false, Some(written)) => first.perf_name(written),
            (false, None) => label.clone(),
        };
        let field = |e: &ResolvedEvent, field: &str| {
            Some(pmus[e.pmu].format.field(field)?.extract(&e.attr))
        };
        let too_big = events.iter().find_map(|e| {
            let value = field(e, "threshold")?;
            (value > DRIVER_THRESHOLD_MAX).then_some(value)
        });
        if let Some(value) = too_big {
            warnings.push(format!(
                "{}: threshold {value} is above {DRIVER_THRESHOLD_MAX}; the cxl_pmu \
                 driver programs only its low 8 bits, so the device uses {}",
                name(),
                value & DRIVER_THRESHOLD_MAX
            ));
        }
        let unfiltered = events.iter().find_map(|e| {
            let hdm = field(e, "hdm")?;
            (hdm != 0 && field(e, "hdm_filter_en")? == 0).then_some(hdm)
        });
        if let Some(hdm) = unfiltered {
            warnings.push(format!(
                "{}: hdm={hdm:#x} without hdm_filter_en; the cxl_pmu driver then \
                 programs no HDM filter and counts every decoder's traffic",
                name()
            ));
        }
    }
    warnings
}

/// The PMU's event called `name`, in any case: perf looks event names (its
/// PMU "aliases") up with `strcasecmp`, while format terms and PMU names
/// stay case-sensitive (`strcmp`) there and here.
fn find_event<'a>(pmu: &'a Pmu, name: &str) -> Option<&'a PmuEvent> {
    pmu.event(name).or_else(|| {
        pmu.events
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    })
}

/// True for a bare term that names an event (not a format field or config word).
fn names_event(pmu: &Pmu, term: &Term) -> bool {
    term.value.is_none()
        && pmu.format.field(&term.name).is_none()
        && ConfigWord::from_name(&term.name).is_none()
}

/// The event name among the terms, if any.
fn event_name<'a>(pmu: &Pmu, terms: &'a [Term]) -> Option<&'a str> {
    terms
        .iter()
        .find(|t| names_event(pmu, t))
        .map(|t| t.name.as_str())
}

/// True when `name` is a format field or config word of one of `targets`.
fn is_term_of(pmus: &[Pmu], targets: &[usize], name: &str) -> bool {
    ConfigWord::from_name(name).is_some()
        || targets
            .iter()
            .any(|&i| pmus[i].format.field(name).is_some())
}

/// Why a bare format term without a PMU is not taken as the flag it could
/// be. Terms hold only letters, digits, `_`, `-` and `.` (`parse_term`).
fn term_without_value(term: &str) -> CxlError {
    CxlError::Spec(format!(
        "{term}: a term of the PMUs' format/, not an event; in a list without a PMU give \
         it a value ({term}=1), or put it in PMU/.../"
    ))
}

/// Why event `name` is refused on `targets`: the PMUs a specification
/// names as `written` (`PMU/.../`), or those chosen for events without one.
fn unknown_event(pmus: &[Pmu], targets: &[usize], written: Option<&str>, name: &str) -> CxlError {
    let place = match (targets, written) {
        ([one], _) => pmus[*one].name.clone(),
        (_, Some(written)) => {
            let names: Vec<&str> = targets.iter().map(|&i| pmus[i].name.as_str()).collect();
            format!("{written} ({})", names.join(", "))
        }
        _ => format!("any of the {} CXL PMUs", targets.len()),
    };
    if catalogue::event(name).is_some() {
        return CxlError::NotOffered {
            name: name.to_string(),
            place,
            offered_by: pmus
                .iter()
                .filter(|p| find_event(p, name).is_some())
                .map(|p| p.name.clone())
                .collect(),
        };
    }
    let on_pmus = targets
        .iter()
        .flat_map(|&i| pmus[i].events.iter().map(|e| e.name.as_str()));
    let mut suggestions = closest(name, on_pmus);
    if suggestions.is_empty() {
        suggestions = closest(name, catalogue::EVENTS.iter().map(|e| e.name))
            .into_iter()
            .map(|n| format!("{n} (not offered here)"))
            .collect();
    }
    CxlError::UnknownEvent {
        name: name.to_string(),
        place: format!("on {place}"),
        suggestions,
    }
}

/// Resolves one specification on one PMU. `Ok(None)` when a named event is
/// not offered by this PMU. `label` is the specification as written
/// ([`super::spec::EventSpec::written`]), which errors quote.
pub fn resolve_on(pmu: &Pmu, terms: &[Term], label: &str) -> Result<Option<EventAttr>, CxlError> {
    if terms.iter().any(|t| t.name == "percore") {
        return Err(CxlError::Spec(format!(
            "{}/{label}/: perf stat's percore sums the hardware threads of each core; a CXL \
             PMU counts its device, not a core",
            pmu.name
        )));
    }
    let mut attr = EventAttr {
        perf_type: pmu.perf_type,
        words: [0; 4],
    };
    let bare: Vec<&Term> = terms.iter().filter(|t| names_event(pmu, t)).collect();
    if bare.len() > 1 {
        // Beside an event of this PMU, another bare word is a term it lacks
        // (a misspelt flag, or hdm_filter_en on a PMU without that filter),
        // as perf reports it.
        let (events, others): (Vec<&Term>, Vec<&Term>) = bare
            .iter()
            .partition(|t| find_event(pmu, &t.name).is_some());
        match (events.len(), others.first()) {
            (1, Some(other)) => {
                return Err(CxlError::UnknownTerm {
                    pmu: pmu.name.clone(),
                    term: other.name.clone(),
                    valid: pmu.format.term_names(),
                });
            }
            (0, _) => return Ok(None),
            _ => {
                return Err(CxlError::Spec(format!(
                    "{}/{label}/: more than one event name",
                    pmu.name
                )));
            }
        }
    }
    let event = match event_name(pmu, terms) {
        Some(name) => match find_event(pmu, name) {
            Some(event) => Some(event),
            None => return Ok(None),
        },
        None => None,
    };
    let mut selects_event = event.is_some();
    // The event name stands for its events/ file's terms, at its place in
    // the list: `config=0x5,clock_ticks` ends with clock_ticks's config, as
    // in perf.
    for words_pass in [true, false] {
        let this_pass = |term: &Term| ConfigWord::from_name(&term.name).is_some() == words_pass;
        for term in terms {
            if names_event(pmu, term) {
                if let Some(event) = event {
                    apply_event_terms(pmu, &mut attr, event, this_pass, label)?;
                }
            } else if this_pass(term) {
                apply(pmu, &mut attr, term, label)?;
                selects_event |= lands_in_config(pmu, &term.name);
            }
        }
    }
    if !selects_event {
        // Named with its PMU, whether the specification named one or not:
        // the terms alone (`invert`) do not tell which -e it was.
        return Err(CxlError::Spec(format!(
            "{}/{label}/: no event selected; give an event name, or vid=,gid=,mask= (or config=)",
            pmu.name
        )));
    }
    Ok(Some(attr))
}

/// The terms of a `PMU/.../` specification with perf's raw terms as
/// `config=`: `rHEX` (`r1e98000000000001`) is `config=0xHEX`, unless a PMU
/// has an event spelled exactly so, which perf's lexer looks for first (on
/// every PMU, case-sensitive).
fn with_raw_terms<'a>(pmus: &[Pmu], terms: &'a [Term]) -> Cow<'a, [Term]> {
    let raw = |term: &Term| -> Option<Term> {
        let hex = term.name.strip_prefix('r')?;
        let is_raw = term.value.is_none()
            && !hex.is_empty()
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
            && !pmus.iter().any(|p| p.event(&term.name).is_some());
        if !is_raw {
            return None;
        }
        Some(Term {
            name: "config".to_string(),
            value: Some(u64::from_str_radix(hex, 16).ok()?),
        })
    };
    if !terms.iter().any(|t| raw(t).is_some()) {
        return Cow::Borrowed(terms);
    }
    Cow::Owned(
        terms
            .iter()
            .map(|t| raw(t).unwrap_or_else(|| t.clone()))
            .collect(),
    )
}

/// Applies the terms of `event`'s events/ file that `this_pass` takes; an
/// error names that file.
fn apply_event_terms(
    pmu: &Pmu,
    attr: &mut EventAttr,
    event: &PmuEvent,
    this_pass: impl Fn(&Term) -> bool,
    label: &str,
) -> Result<(), CxlError> {
    let path = format!(
        "{}/{}/events/{}",
        super::sysfs::EVENT_SOURCE_DIR,
        pmu.name,
        event.name
    );
    for term in event.terms.iter().filter(|t| this_pass(t)) {
        apply(pmu, attr, term, label).map_err(|e| CxlError::bad_file(&path, &e.to_string()))?;
    }
    Ok(())
}

fn lands_in_config(pmu: &Pmu, name: &str) -> bool {
    ConfigWord::from_name(name) == Some(ConfigWord::Config)
        || pmu
            .format
            .field(name)
            .is_some_and(|f| f.word == ConfigWord::Config)
}

/// perf's terms that set up sampling, which a CXL PMU cannot do: named as
/// such instead of as unknown terms.
const PERF_SAMPLING_TERMS: [&str; 5] = [
    "period",
    "freq",
    "max-stack",
    "stack-size",
    "aux-sample-size",
];

fn apply(pmu: &Pmu, attr: &mut EventAttr, term: &Term, label: &str) -> Result<(), CxlError> {
    let value = term.value.unwrap_or(1);
    if let Some(word) = ConfigWord::from_name(&term.name) {
        attr.set_word(word, value);
        return Ok(());
    }
    match pmu.format.field(&term.name) {
        Some(field) => field.insert(attr, value).map_err(|e| CxlError::BadValue {
            pmu: pmu.name.clone(),
            label: label.to_string(),
            reason: e.to_string(),
        }),
        None if PERF_SAMPLING_TERMS.contains(&term.name.as_str()) => Err(CxlError::PerTask(
            format!("perf's sampling term {}=", term.name),
        )),
        None => Err(CxlError::UnknownTerm {
            pmu: pmu.name.clone(),
            term: term.name.clone(),
            valid: pmu.format.term_names(),
        }),
    }
}
