//! Series colours: a fixed list of distinct colours that print and read on
//! white, then generated hues for long legends.

/// An RGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Colour(pub u8, pub u8, pub u8);

/// The grey of "the rest" (series summarised together).
pub const REST: Colour = Colour(0x7f, 0x7f, 0x7f);

/// The first colours handed out, in order (distinct in hue and lightness,
/// none close to white or to the rest's grey).
const FIXED: [Colour; 10] = [
    Colour(0x1f, 0x77, 0xb4),
    Colour(0xff, 0x7f, 0x0e),
    Colour(0x2c, 0xa0, 0x2c),
    Colour(0xd6, 0x27, 0x28),
    Colour(0x94, 0x67, 0xbd),
    Colour(0x8c, 0x56, 0x4b),
    Colour(0xe3, 0x77, 0xc2),
    Colour(0xbc, 0xbd, 0x22),
    Colour(0x17, 0xbe, 0xcf),
    Colour(0x00, 0x00, 0x00),
];

/// The colour of the `index`th series: ten fixed colours, then hues a golden angle
/// apart at alternating lightness.
pub fn series(index: usize) -> Colour {
    if let Some(c) = FIXED.get(index) {
        return *c;
    }
    let n = index - FIXED.len();
    let hue = (n as f64 * 137.508) % 360.0;
    let lightness = [0.35, 0.5, 0.65][n % 3];
    hsl(hue, 0.75, lightness)
}

/// A colour for a value 0–1 of a heat map: dark purple (0) through teal to
/// yellow (1), readable by the colour-blind and in grey print.
pub fn scale(value: f64) -> Colour {
    const STOPS: [(f64, Colour); 3] = [
        (0.0, Colour(0x44, 0x01, 0x54)),
        (0.5, Colour(0x21, 0x91, 0x8c)),
        (1.0, Colour(0xfd, 0xe7, 0x25)),
    ];
    let v = value.clamp(0.0, 1.0);
    let (lo, hi) = if v <= 0.5 {
        (STOPS[0], STOPS[1])
    } else {
        (STOPS[1], STOPS[2])
    };
    let t = (v - lo.0) / (hi.0 - lo.0);
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    Colour(
        mix(lo.1.0, hi.1.0),
        mix(lo.1.1, hi.1.1),
        mix(lo.1.2, hi.1.2),
    )
}

fn hsl(hue: f64, saturation: f64, lightness: f64) -> Colour {
    let c = (1.0 - (2.0 * lightness - 1.0).abs()) * saturation;
    let h = hue / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = lightness - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round() as u8;
    Colour(byte(r), byte(g), byte(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_first_hundred_series_colours_differ_and_none_is_the_rests() {
        let colours: HashSet<Colour> = (0..100).map(series).collect();
        assert_eq!(colours.len(), 100);
        assert!(!colours.contains(&REST));
        assert!(!colours.contains(&Colour(0xff, 0xff, 0xff)));
    }

    #[test]
    fn the_scale_runs_from_purple_to_yellow() {
        assert_eq!(scale(0.0), Colour(0x44, 0x01, 0x54));
        assert_eq!(scale(0.5), Colour(0x21, 0x91, 0x8c));
        assert_eq!(scale(1.0), Colour(0xfd, 0xe7, 0x25));
        assert_eq!(scale(7.0), scale(1.0));
    }
}
