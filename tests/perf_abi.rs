//! cxlstat's own perf ABI (src/common/perf.rs) against perf-event-open-sys2's
//! generated bindings and perf-event2's builder, on the architectures those
//! crates have bindings for: the constants, the `perf_event_attr` layout,
//! and the exact bytes of every attr cxlstat opens.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]

use std::mem::{offset_of, size_of};

use hwstat::common::perf::{self, PerfEventAttr};
use hwstat::cxlstat::counting::event_attr;
use hwstat::cxlstat::format::EventAttr;
use perf_event::events::Event;
use perf_event::{Builder, ReadFormat};
use perf_event_open_sys::bindings as sys;

#[test]
fn ioctl_numbers_match_the_bindings() {
    assert_eq!(perf::ENABLE.number(), sys::ENABLE);
    assert_eq!(perf::SET_OUTPUT.number(), sys::SET_OUTPUT);
    assert_eq!(perf::IOC_FLAG_GROUP, u64::from(sys::PERF_IOC_FLAG_GROUP));
}

#[test]
fn flags_and_formats_match_the_bindings() {
    assert_eq!(perf::FLAG_FD_CLOEXEC, u64::from(sys::PERF_FLAG_FD_CLOEXEC));
    let formats = [
        (
            perf::FORMAT_TOTAL_TIME_ENABLED,
            sys::PERF_FORMAT_TOTAL_TIME_ENABLED,
        ),
        (
            perf::FORMAT_TOTAL_TIME_RUNNING,
            sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
        ),
        (perf::FORMAT_ID, sys::PERF_FORMAT_ID),
        (perf::FORMAT_GROUP, sys::PERF_FORMAT_GROUP),
    ];
    for (ours, theirs) in formats {
        assert_eq!(ours, u64::from(theirs));
    }
    assert_eq!(perf::PERF_ATTR_SIZE, sys::PERF_ATTR_SIZE_VER8);
    let mut attr = sys::perf_event_attr::default();
    attr.set_disabled(1);
    assert_eq!(perf::FLAG_DISABLED, attr_bytes_flags(&attr));
    let mut attr = sys::perf_event_attr::default();
    attr.set_use_clockid(1);
    assert_eq!(perf::FLAG_USE_CLOCKID, attr_bytes_flags(&attr));
    let mut attr = sys::perf_event_attr::default();
    attr.set_watermark(1);
    assert_eq!(perf::FLAG_WATERMARK, attr_bytes_flags(&attr));
}

/// What iostat-rs --latency's tracepoint sampling sets.
#[test]
fn sampling_constants_match_the_bindings() {
    assert_eq!(perf::TYPE_TRACEPOINT, sys::PERF_TYPE_TRACEPOINT);
    assert_eq!(perf::SAMPLE_TIME, u64::from(sys::PERF_SAMPLE_TIME));
    assert_eq!(perf::SAMPLE_RAW, u64::from(sys::PERF_SAMPLE_RAW));
    assert_eq!(
        offset_of!(PerfEventAttr, clockid),
        offset_of!(sys::perf_event_attr, clockid)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, sample_type),
        offset_of!(sys::perf_event_attr, sample_type)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, wakeup_events),
        offset_of!(sys::perf_event_attr, __bindgen_anon_2)
    );
}

/// The bit-field word of a bindings attr (offset 40), read as the kernel does.
fn attr_bytes_flags(attr: &sys::perf_event_attr) -> u64 {
    let bytes = bytes_of(attr);
    u64::from_ne_bytes(bytes[40..48].try_into().unwrap())
}

#[test]
fn attr_layout_matches_the_bindings() {
    assert_eq!(
        size_of::<PerfEventAttr>(),
        size_of::<sys::perf_event_attr>()
    );
    assert_eq!(
        offset_of!(PerfEventAttr, type_),
        offset_of!(sys::perf_event_attr, type_)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, size),
        offset_of!(sys::perf_event_attr, size)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, config),
        offset_of!(sys::perf_event_attr, config)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, read_format),
        offset_of!(sys::perf_event_attr, read_format)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, flags),
        offset_of!(sys::perf_event_attr, _bitfield_1)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, config1),
        offset_of!(sys::perf_event_attr, __bindgen_anon_3)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, config2),
        offset_of!(sys::perf_event_attr, __bindgen_anon_4)
    );
    assert_eq!(
        offset_of!(PerfEventAttr, config3),
        offset_of!(sys::perf_event_attr, config3)
    );
}

/// The attrs cxlstat opened through perf-event2 before it had its own ABI.
#[derive(Clone, Copy)]
struct Oracle(EventAttr);

impl Event for Oracle {
    fn update_attrs(self, attr: &mut sys::perf_event_attr) {
        attr.type_ = self.0.perf_type;
        attr.config = self.0.words[0];
        attr.config1 = self.0.words[1];
        attr.config2 = self.0.words[2];
        attr.config3 = self.0.words[3];
    }
}

fn oracle(attr: EventAttr, enabled: bool, group_leader: bool) -> sys::perf_event_attr {
    let mut b = Builder::new(Oracle(attr));
    b.any_pid()
        .one_cpu(0)
        .include_kernel()
        .include_hv()
        .enabled(enabled);
    let times = ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING;
    b.read_format(if group_leader {
        ReadFormat::GROUP | times
    } else {
        times
    });
    *b.attrs()
}

fn bytes_of<T>(value: &T) -> &[u8] {
    // SAFETY: both attr types are plain repr(C) integers with no padding.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

#[test]
fn cxlstat_attrs_are_byte_for_byte_what_perf_event2_built() {
    let events = [
        EventAttr {
            perf_type: 11,
            words: [0x19e5_0000_00ff, 0, 0, 0],
        },
        EventAttr {
            perf_type: 42,
            words: [u64::MAX, 0x1234, 0x8000_0000_0000_0001, 0xabcd],
        },
    ];
    for attr in events {
        for (enabled, leader) in [(false, false), (false, true), (true, false)] {
            let ours = event_attr(attr, enabled, leader);
            let theirs = oracle(attr, enabled, leader);
            assert_eq!(
                bytes_of(&ours),
                bytes_of(&theirs),
                "{attr:?} enabled {enabled} leader {leader}"
            );
        }
    }
}
