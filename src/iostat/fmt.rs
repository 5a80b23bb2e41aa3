//! Text layout helpers of iostat-rs's reports (its numbers go through
//! [`crate::common::fixed`]).

/// Appends `text` left-aligned in `width` bytes, as C's `%-13s` pads it: a
/// name with characters of more than one byte takes that many fewer
/// spaces, so every column after it starts at the byte sysstat's does.
pub fn push_left(out: &mut String, text: &str, width: usize) {
    out.push_str(text);
    if text.len() < width {
        out.extend(std::iter::repeat_n(' ', width - text.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_alignment_counts_bytes_as_printf_does() {
        let mut s = String::new();
        push_left(&mut s, "sda", 13);
        push_left(&mut s, "é", 3);
        push_left(&mut s, "a-very-long-device-name", 13);
        // printf("%-13s%-3s%-13s"): "é" is two bytes, so one space follows.
        assert_eq!(s, "sda          é a-very-long-device-name");
    }
}
