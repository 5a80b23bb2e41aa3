//! The event-specification grammar of `-e`, compatible with perf:
//!
//! * `NAME`: a named event, on every CXL PMU (or those chosen with `--pmu`);
//! * `PMU/TERMS/`: on one PMU, where TERMS is a comma list of an event name
//!   and `term=value` (or bare flag) terms from that PMU's `format/`,
//!   perf's raw `rHEX` (`config=0xHEX`), and perf's `name=NAME`, which
//!   names the event in the output;
//! * `vid=..,gid=..,mask=..`: raw terms without a PMU, on every CXL PMU;
//! * `{a,b,...}`: a group, counted together (one group per PMU);
//! * comma lists of all of these in one `-e`, and repeated `-e`.

use super::events::{Term, parse_term};
use crate::common::escape::quoted;
use crate::common::excerpt::excerpt_arg;

/// One event as written by the user, not yet resolved against a PMU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    /// The PMU named in `PMU/.../`, or `None` for every selected CXL PMU.
    pub pmu: Option<String>,
    /// The terms: a bare name is an event name (or a flag), others set fields.
    pub terms: Vec<Term>,
    /// How the event is shown in output: the terms as written, without the
    /// PMU, or the `name=` given.
    pub label: String,
    /// True when `label` is a `name=` term's: shown as it is, never as `PMU/label/`.
    pub named: bool,
    /// The terms as written, `name=` included, without the PMU: what
    /// messages about the specification quote.
    pub written: String,
}

/// A comma-list item: one event alone, or a `{...}` group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecGroup {
    /// The events.
    pub members: Vec<EventSpec>,
    /// True for `{...}`: the members are read together in one perf group.
    pub grouped: bool,
}

/// Parses every `-e` argument, in order.
pub fn parse_event_args(args: &[String]) -> Result<Vec<SpecGroup>, String> {
    let mut groups = Vec::new();
    for arg in args {
        groups.extend(parse_event_list(arg).map_err(|e| {
            // An argument of one item is named once, not as `-e` and again
            // as the item.
            let arg = quoted(arg);
            let item = format!("{arg}: ");
            format!("-e {arg}: {}", e.strip_prefix(&item).unwrap_or(&e))
        })?);
    }
    if groups.is_empty() {
        return Err("no event given: use -e NAME (see --list-events)".to_string());
    }
    Ok(groups)
}

/// Parses one `-e` argument.
pub fn parse_event_list(text: &str) -> Result<Vec<SpecGroup>, String> {
    let mut groups = Vec::new();
    for item in split_top_level(text)? {
        if let Some(inner) = item.strip_prefix('{') {
            let inner = match inner.rsplit_once('}') {
                Some((inner, "")) => inner,
                Some((_, tail)) if tail.starts_with(':') && looks_like_modifiers(tail) => {
                    return Err(modifiers_refused(item, tail));
                }
                _ => return Err(format!("group {} must end with '}}'", quoted(item))),
            };
            let members = parse_members(&split_top_level(inner)?)?;
            if members.is_empty() {
                return Err("empty group {}".to_string());
            }
            groups.push(SpecGroup {
                members,
                grouped: true,
            });
        } else {
            groups.extend(parse_members(&[item])?.into_iter().map(|m| SpecGroup {
                members: vec![m],
                grouped: false,
            }));
        }
    }
    merge_raw_runs(groups)
}

/// Items of a comma list: commas inside `PMU/.../` or `{...}` do not split.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let (mut depth, mut in_pmu, mut start) = (0usize, false, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '/' => in_pmu = !in_pmu,
            '{' if !in_pmu => depth += 1,
            '}' if !in_pmu => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| "unbalanced '}'".to_string())?
            }
            ',' if depth == 0 && !in_pmu => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unbalanced '{'".to_string());
    }
    if in_pmu {
        return Err("a PMU/.../ event is missing its closing '/'".to_string());
    }
    items.push(&text[start..]);
    items
        .into_iter()
        .map(|item| {
            let item = item.trim();
            if item.is_empty() {
                Err("empty event in the list".to_string())
            } else {
                Ok(item)
            }
        })
        .collect()
}

/// Parses items that are not groups (a group nested in a group is refused).
/// Consecutive bare `term=value` items form one raw event.
fn parse_members(items: &[&str]) -> Result<Vec<EventSpec>, String> {
    let mut members: Vec<EventSpec> = Vec::new();
    let mut raw_run = false;
    for item in items {
        if item.starts_with('{') {
            return Err(format!("{}: groups cannot be nested", quoted(item)));
        }
        if let Some((pmu, rest)) = item.split_once('/') {
            let inner = match rest.rsplit_once('/') {
                Some((inner, "")) => inner,
                Some((_, tail)) if looks_like_modifiers(tail) => {
                    return Err(modifiers_refused(item, tail));
                }
                _ => return Err(format!("{}: expected PMU/TERMS/", quoted(item))),
            };
            // perf's lexer skips blanks between the PMU and its '/'.
            let pmu = pmu.trim_end_matches([' ', '\t']);
            if pmu.is_empty() {
                return Err(format!("{}: expected a PMU name before '/'", quoted(item)));
            }
            let (terms, name) = pmu_terms(inner).map_err(|e| format!("{}: {e}", quoted(item)))?;
            members.push(EventSpec {
                pmu: Some(pmu.to_string()),
                named: name.is_some(),
                label: name.unwrap_or_else(|| inner.trim().to_string()),
                written: inner.trim().to_string(),
                terms,
            });
            raw_run = false;
        } else if item.contains('=') {
            if item.starts_with("name=") {
                return Err(format!(
                    "{}: name= names an event only inside PMU/.../, as in perf \
                     (PMU/vid=...,name=NAME/)",
                    quoted(item)
                ));
            }
            let term = parse_term(item)?;
            match members.last_mut() {
                Some(last) if raw_run => join_raw(last, &[term], item)?,
                _ => members.push(EventSpec {
                    pmu: None,
                    label: item.to_string(),
                    named: false,
                    written: item.to_string(),
                    terms: vec![term],
                }),
            }
            raw_run = true;
        } else {
            if let Some((_, tail)) = item
                .split_once(':')
                .filter(|(_, t)| looks_like_modifiers(t))
            {
                return Err(modifiers_refused(item, tail));
            }
            // `NAME:` is NAME with no modifier, as in perf.
            let term = parse_term(item.strip_suffix(':').unwrap_or(item))?;
            members.push(EventSpec {
                pmu: None,
                label: term.name.clone(),
                named: false,
                written: (*item).to_string(),
                terms: vec![term],
            });
            raw_run = false;
        }
    }
    Ok(members)
}

/// True for what perf takes as event modifiers after an event or group:
/// letters, optionally after a `:` (`u`, `:k`, `D`).
fn looks_like_modifiers(tail: &str) -> bool {
    let letters = tail.strip_prefix(':').unwrap_or(tail);
    !letters.is_empty() && letters.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Why perf's event modifiers are refused, for each kind given: the
/// privilege and host/guest filters set `exclude_*` bits, which the cxl_pmu
/// driver refuses (`PERF_PMU_CAP_NO_EXCLUDE`); the precision and sample
/// modifiers ask for sampling, which it cannot do; pinning, exclusivity,
/// weak groups and BPF counting it would take, but cxlstat does not offer.
fn modifiers_refused(item: &str, modifiers: &str) -> String {
    let has = |set: &str| modifiers.chars().any(|c| set.contains(c));
    let mut reasons = Vec::new();
    if has("ukhGHI") {
        reasons.push(
            "a CXL PMU counts all of its device's traffic, and the cxl_pmu driver refuses \
             the privilege and host/guest filters (u k h G H I)",
        );
    }
    if has("pPS") {
        reasons.push("a CXL PMU cannot sample (p P S)");
    }
    if modifiers
        .chars()
        .any(|c| c != ':' && !"ukhGHIpPS".contains(c))
    {
        reasons.push("cxlstat offers none of perf's other modifiers (D e W b)");
    }
    format!(
        "{}: event modifiers ({}) are not supported: {}",
        quoted(item),
        quoted(modifiers),
        reasons.join("; ")
    )
}

/// The terms inside `PMU/.../`, and the name of perf's `name=NAME` term
/// among them (given at most once).
fn pmu_terms(inner: &str) -> Result<(Vec<Term>, Option<String>), String> {
    let mut name = None;
    let mut terms = Vec::new();
    if inner.trim().is_empty() {
        // `PMU//`: no terms, which selects no event (refused when resolved).
        return Ok((terms, name));
    }
    for text in inner.split(',') {
        if text.trim().starts_with("metric-id=") {
            return Err(
                "perf's metric-id= names an event in a metric expression, and cxlstat has no \
                 metrics; name the event with name="
                    .to_string(),
            );
        }
        match text.trim().strip_prefix("name=") {
            Some(_) if name.is_some() => return Err("name= is given twice".to_string()),
            Some(value) => name = Some(display_name(value)?),
            None => terms.push(parse_term(text)?),
        }
    }
    Ok((terms, name))
}

/// The longest `name=` accepted, in bytes.
const NAME_MAX: usize = 255;

/// Checks a `name=` value: what perf's lexer takes as a name, a letter or
/// `_` then letters, digits, `_`, `.` and `-` (without perf's glob
/// characters), at most `NAME_MAX` bytes.
fn display_name(value: &str) -> Result<String, String> {
    let mut bytes = value.bytes();
    let starts_well = bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    let rest_ok = bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if starts_well && rest_ok && value.len() <= NAME_MAX {
        Ok(value.to_string())
    } else {
        Err(format!(
            "name={}: expected a name of at most {NAME_MAX} letters, digits, '_', '.' and '-', \
             starting with a letter or '_'",
            excerpt_arg(value)
        ))
    }
}

/// Adds the `terms` of the next piece of a PMU-less raw event (`label` as
/// written) to the event `last`. A term it already has is refused: commas
/// separate both terms and events, so `mask=0,mask=3` cannot say whether
/// it means one event or two.
fn join_raw(last: &mut EventSpec, terms: &[Term], label: &str) -> Result<(), String> {
    if let Some(again) = terms
        .iter()
        .find(|t| last.terms.iter().any(|had| had.name == t.name))
    {
        return Err(format!(
            "{}: the raw event {} already sets {}; give each raw event its own -e \
             (-e {},... -e {label},...), or write it with its PMU (PMU/TERMS/)",
            quoted(label),
            quoted(&last.label),
            quoted(&again.name),
            last.label
        ));
    }
    last.terms.extend(terms.iter().cloned());
    last.label = format!("{},{label}", last.label);
    last.written = last.label.clone();
    Ok(())
}

/// Joins single raw-term events that the top-level split cut apart
/// (`-e vid=1,gid=2,mask=4` is one event, not three).
fn merge_raw_runs(groups: Vec<SpecGroup>) -> Result<Vec<SpecGroup>, String> {
    let mut merged: Vec<SpecGroup> = Vec::new();
    for group in groups {
        let is_raw_piece = |g: &SpecGroup| {
            !g.grouped
                && g.members[0].pmu.is_none()
                && g.members[0].terms.iter().all(|t| t.value.is_some())
        };
        let joins = is_raw_piece(&group) && merged.last().is_some_and(is_raw_piece);
        if joins {
            let last = &mut merged.last_mut().expect("checked").members[0];
            let piece = &group.members[0];
            join_raw(last, &piece.terms, &piece.label)?;
        } else {
            merged.push(group);
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(groups: &[SpecGroup]) -> Vec<(Option<String>, String, bool)> {
        groups
            .iter()
            .flat_map(|g| {
                g.members
                    .iter()
                    .map(move |m| (m.pmu.clone(), m.label.clone(), g.grouped))
            })
            .collect()
    }

    #[test]
    fn names_pmu_events_raw_terms_and_groups() {
        let groups = parse_event_args(&[
            "d2h_req_rdshared,clock_ticks".into(),
            "cxl_pmu_mem0.0/d2h_req_rdshared,threshold=1/".into(),
            "vid=0x19e5,gid=0,mask=0xff".into(),
            "{clock_ticks,cxl_pmu_mem0.0/vid=0x1e98,gid=0x10,mask=0x3e/}".into(),
        ])
        .unwrap();
        assert_eq!(
            labels(&groups),
            vec![
                (None, "d2h_req_rdshared".into(), false),
                (None, "clock_ticks".into(), false),
                (
                    Some("cxl_pmu_mem0.0".into()),
                    "d2h_req_rdshared,threshold=1".into(),
                    false
                ),
                (None, "vid=0x19e5,gid=0,mask=0xff".into(), false),
                (None, "clock_ticks".into(), true),
                (
                    Some("cxl_pmu_mem0.0".into()),
                    "vid=0x1e98,gid=0x10,mask=0x3e".into(),
                    true
                ),
            ]
        );
        assert_eq!(groups.len(), 5);
        assert_eq!(groups[4].members.len(), 2);
    }

    #[test]
    fn blanks_before_the_pmu_slash_and_an_empty_modifier_are_taken_as_perf_takes_them() {
        let groups = parse_event_list("cxl_pmu_mem0.0 /clock_ticks/, clock_ticks:").unwrap();
        assert_eq!(
            labels(&groups),
            vec![
                (Some("cxl_pmu_mem0.0".into()), "clock_ticks".into(), false),
                (None, "clock_ticks".into(), false),
            ]
        );
    }

    #[test]
    fn raw_runs_stop_at_names_and_groups_keep_their_own_raw_runs() {
        let groups = parse_event_list("vid=1,gid=2,clock_ticks,mask=4,{vid=1,mask=2,x}").unwrap();
        assert_eq!(
            labels(&groups),
            vec![
                (None, "vid=1,gid=2".into(), false),
                (None, "clock_ticks".into(), false),
                (None, "mask=4".into(), false),
                (None, "vid=1,mask=2".into(), true),
                (None, "x".into(), true),
            ]
        );
    }

    #[test]
    fn a_name_term_names_the_event_and_is_not_a_term() {
        let groups =
            parse_event_list("cxl_pmu_mem0.0/vid=0x19e5,name=rd.all-x_1,gid=1,mask=1/").unwrap();
        let event = &groups[0].members[0];
        assert_eq!((event.label.as_str(), event.named), ("rd.all-x_1", true));
        let names: Vec<&str> = event.terms.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["vid", "gid", "mask"]);
        let plain = &parse_event_list("cxl_pmu_mem0.0/clock_ticks/").unwrap()[0].members[0];
        assert_eq!((plain.label.as_str(), plain.named), ("clock_ticks", false));
        for (bad, why) in [
            ("cxl_pmu_mem0.0/clock_ticks,name=a,name=b/", "given twice"),
            ("cxl_pmu_mem0.0/clock_ticks,name=/", "expected a name"),
            (
                "cxl_pmu_mem0.0/clock_ticks,name=9lives/",
                "starting with a letter",
            ),
            ("cxl_pmu_mem0.0/clock_ticks,name=a b/", "expected a name"),
            (
                "cxl_pmu_mem0.0/clock_ticks,name=a\u{1b}[31m/",
                "expected a name",
            ),
        ] {
            let err = parse_event_list(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(!err.contains('\u{1b}'), "{bad:?}: {err:?}");
        }
        let long = format!(
            "cxl_pmu_mem0.0/clock_ticks,name={}/",
            "n".repeat(NAME_MAX + 1)
        );
        assert!(parse_event_list(&long).unwrap_err().contains("at most 255"));
        let longest = format!("cxl_pmu_mem0.0/clock_ticks,name={}/", "n".repeat(NAME_MAX));
        assert!(parse_event_list(&longest).is_ok());
    }

    #[test]
    fn malformed_lists_are_refused_with_the_reason() {
        for (bad, why) in [
            ("{a,b", "unbalanced '{'"),
            ("a}", "unbalanced '}'"),
            ("cxl_pmu_mem0.0/clock_ticks", "closing '/'"),
            ("a,,b", "empty event"),
            ("{a,{b}}", "nested"),
            ("{}", "empty"),
            ("/x/", "PMU name"),
            ("mask=zz", "expected a number"),
            (
                "vid=0x1e98,mask=1,name=x",
                "name= names an event only inside PMU/.../",
            ),
            ("name=x", "name= names an event only inside PMU/.../"),
            ("{a}:u", "modifiers (\":u\") are not supported"),
            ("cxl_pmu_mem0.0/clock_ticks/u", "modifiers (\"u\")"),
            ("cxl_pmu_mem0.0/clock_ticks/:D", "modifiers (\":D\")"),
            ("clock_ticks:k", "modifiers (\"k\")"),
            ("{a}x,b", "must end with '}'"),
            ("cxl_pmu_mem0.0/a/1", "expected PMU/TERMS/"),
            (" /a/", "PMU name"),
            ("clock_ticks::", "expected NAME"),
            (
                "cxl_pmu_mem0.0/clock_ticks,metric-id=x/",
                "metric-id= names an event in a metric expression",
            ),
        ] {
            let err = parse_event_list(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert!(parse_event_args(&[]).unwrap_err().contains("no event"));
        // Two raw events in one list would be one event with its terms set twice.
        assert_eq!(
            parse_event_list("vid=0x1e98,gid=0,mask=1,vid=0x1e98,gid=0x8000,mask=1").unwrap_err(),
            "\"vid=0x1e98\": the raw event \"vid=0x1e98,gid=0,mask=1\" already sets \"vid\"; \
             give each raw event its own -e (-e vid=0x1e98,gid=0,mask=1,... -e vid=0x1e98,...), \
             or write it with its PMU (PMU/TERMS/)"
        );
        assert!(
            parse_event_list("{mask=0,mask=3}")
                .unwrap_err()
                .contains("already sets \"mask\"")
        );
        assert_eq!(
            parse_event_args(&["cxl_pmu_mem0.0/vid=-1/".into()]).unwrap_err(),
            "-e \"cxl_pmu_mem0.0/vid=-1/\": \"vid=-1\": expected a number after '=' (decimal or 0x hex)"
        );
        assert_eq!(
            parse_event_args(&["clock_ticks,x/a/u".into()]).unwrap_err(),
            "-e \"clock_ticks,x/a/u\": \"x/a/u\": event modifiers (\"u\") are not supported: \
             a CXL PMU counts all of its device's traffic, and the cxl_pmu driver refuses the \
             privilege and host/guest filters (u k h G H I)"
        );
        assert_eq!(
            parse_event_list("cxl_pmu_mem0.0/clock_ticks/Dp").unwrap_err(),
            "\"cxl_pmu_mem0.0/clock_ticks/Dp\": event modifiers (\"Dp\") are not supported: \
             a CXL PMU cannot sample (p P S); cxlstat offers none of perf's other modifiers \
             (D e W b)"
        );
    }
}
