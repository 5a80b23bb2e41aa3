//! Whether reading `cpu-N` can crash this kernel.
//!
//! With `CONFIG_HARDENED_USERCOPY`, `dtl_file_read()` hit
//! `kernel BUG at mm/usercopy.c:102!` because the DTL slab cache was not
//! whitelisted for copies to user space. Commit 1a14150e1656
//! ("powerpc/pseries: Whitelist dtl slub object for copying to userspace")
//! fixed it in v6.10-rc7; the stable backports went into 6.9.11, 6.6.42,
//! 6.1.101, 5.15.164, 5.10.223 and 5.4.281 (each checked in the stable
//! review series of 23 and 25 July 2024; the project's reference notes
//! said 6.1.99 and 5.10.221, which predate the backport). The whitelist requirement itself came with v4.16 ("usercopy:
//! Restrict non-usercopy caches to size 0"), so older kernels are not
//! affected.

use crate::common::source::Source;

/// Stable series that received the fix, with the first fixed release.
const FIXED_STABLE: [((u32, u32), u32); 6] = [
    ((6, 9), 11),
    ((6, 6), 42),
    ((6, 1), 101),
    ((5, 15), 164),
    ((5, 10), 223),
    ((5, 4), 281),
];

/// What the version check concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Reading the DTL is safe on this kernel.
    Safe,
    /// Reading the DTL may crash this kernel; the text says why.
    MayCrash(String),
}

/// Parses `major.minor.patch` from the front of a kernel release string
/// (`6.6.41-1.el9.ppc64le` gives (6, 6, 41); a missing patch is 0).
pub fn parse_release(release: &str) -> Option<(u32, u32, u32)> {
    let mut numbers = release.split(['.', '-', '+', '_']).map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = numbers.next()??;
    let minor = numbers.next()??;
    let patch = numbers.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// Whether a kernel of this release, with `hardened` usercopy (`None`:
/// unknown, assumed on as in most distribution kernels), may crash.
pub fn judge(release: &str, hardened: Option<bool>) -> Verdict {
    if hardened == Some(false) {
        return Verdict::Safe;
    }
    let Some((major, minor, patch)) = parse_release(release) else {
        return Verdict::MayCrash(format!(
            "cannot tell whether kernel {release:?} has the DTL usercopy fix"
        ));
    };
    if (major, minor) >= (6, 10) || (major, minor) < (4, 16) {
        return Verdict::Safe;
    }
    let fixed_in = FIXED_STABLE
        .iter()
        .find(|(series, _)| *series == (major, minor))
        .map(|(_, first)| *first);
    match fixed_in {
        Some(first) if patch >= first => Verdict::Safe,
        Some(first) => Verdict::MayCrash(format!(
            "kernel {release} reads the DTL with hardened usercopy and crashes \
             (kernel BUG at mm/usercopy.c:102); the fix is in {major}.{minor}.{first} and 6.10"
        )),
        None => Verdict::MayCrash(format!(
            "kernel {release} reads the DTL with hardened usercopy and crashes \
             (kernel BUG at mm/usercopy.c:102); series {major}.{minor} never got the fix (6.10 has it)"
        )),
    }
}

/// Looks for `CONFIG_HARDENED_USERCOPY` in `/boot/config-<release>`.
pub fn hardened_usercopy(source: &dyn Source, release: &str) -> Option<bool> {
    let config = source
        .read_string(&format!("/boot/config-{release}"))
        .ok()?;
    for line in config.lines() {
        if line.trim() == "CONFIG_HARDENED_USERCOPY=y" {
            return Some(true);
        }
        if line.trim() == "# CONFIG_HARDENED_USERCOPY is not set" {
            return Some(false);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_with_distribution_suffixes() {
        assert_eq!(parse_release("6.6.41-1.el9.ppc64le"), Some((6, 6, 41)));
        assert_eq!(parse_release("6.10"), Some((6, 10, 0)));
        assert_eq!(
            parse_release("5.14.0-427.13.1.el9_4.ppc64le"),
            Some((5, 14, 0))
        );
        assert_eq!(parse_release("x"), None);
    }

    #[test]
    fn unfixed_hardened_kernels_are_refused() {
        assert_eq!(judge("6.10.0", None), Verdict::Safe);
        assert_eq!(judge("6.18.4", None), Verdict::Safe);
        assert_eq!(judge("6.6.42", None), Verdict::Safe);
        assert!(matches!(judge("6.6.41", None), Verdict::MayCrash(m) if m.contains("6.6.42")));
        assert!(
            matches!(judge("5.14.0-427.el9", None), Verdict::MayCrash(m) if m.contains("never got"))
        );
        assert_eq!(judge("5.14.0-427.el9", Some(false)), Verdict::Safe);
        assert_eq!(judge("4.15.0", None), Verdict::Safe);
        assert_eq!(judge("5.10.223", Some(true)), Verdict::Safe);
        assert!(matches!(
            judge("5.10.222", Some(true)),
            Verdict::MayCrash(_)
        ));
        assert!(matches!(judge("weird", None), Verdict::MayCrash(_)));
    }
}
