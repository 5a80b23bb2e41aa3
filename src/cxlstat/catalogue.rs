//! The CXL events the kernel names (`drivers/perf/cxl_pmu.c`), with their
//! event group and a one-line description, for `--list-events` and for
//! suggesting names. What a device supports is always read from its
//! `events/` directory; this table only names and describes.

/// A CXL event group (the `gid` of CXL-defined events, vendor ID 0x1e98).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventGroup {
    /// Group ID.
    pub gid: u16,
    /// Short name, the prefix of its events' names.
    pub name: &'static str,
    /// What the group counts.
    pub description: &'static str,
}

/// A named CXL event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownEvent {
    /// The kernel's name (the file under `events/`).
    pub name: &'static str,
    /// Group ID.
    pub gid: u16,
    /// Event mask (one bit).
    pub mask: u32,
    /// One line on what it counts.
    pub description: &'static str,
}

/// The PCI vendor ID of the CXL consortium, used by every named event.
pub const CXL_VENDOR_ID: u16 = 0x1e98;

/// The CXL-defined event groups.
pub const GROUPS: &[EventGroup] = &[
    EventGroup {
        gid: 0x0000,
        name: "clock_ticks",
        description: "Clock ticks",
    },
    EventGroup {
        gid: 0x0010,
        name: "d2h_req",
        description: "CXL.cache device-to-host requests",
    },
    EventGroup {
        gid: 0x0011,
        name: "d2h_rsp",
        description: "CXL.cache device-to-host responses",
    },
    EventGroup {
        gid: 0x0012,
        name: "h2d_req",
        description: "CXL.cache host-to-device requests (snoops)",
    },
    EventGroup {
        gid: 0x0013,
        name: "h2d_rsp",
        description: "CXL.cache host-to-device responses",
    },
    EventGroup {
        gid: 0x0014,
        name: "cachedata",
        description: "CXL.cache data transfers",
    },
    EventGroup {
        gid: 0x0020,
        name: "m2s_req",
        description: "CXL.mem master-to-subordinate requests",
    },
    EventGroup {
        gid: 0x0021,
        name: "m2s_rwd",
        description: "CXL.mem master-to-subordinate requests with data",
    },
    EventGroup {
        gid: 0x0022,
        name: "m2s_birsp",
        description: "CXL.mem back-invalidate responses",
    },
    EventGroup {
        gid: 0x0023,
        name: "s2m_bisnp",
        description: "CXL.mem back-invalidate snoops",
    },
    EventGroup {
        gid: 0x0024,
        name: "s2m_ndr",
        description: "CXL.mem subordinate-to-master no-data responses",
    },
    EventGroup {
        gid: 0x0025,
        name: "s2m_drs",
        description: "CXL.mem subordinate-to-master data responses",
    },
    EventGroup {
        gid: 0x8000,
        name: "ddr",
        description: "DDR interface events",
    },
    EventGroup {
        gid: 0x8001,
        name: "queue_occ",
        description: "Queue occupancy",
    },
    EventGroup {
        gid: 0x8002,
        name: "queue_resid",
        description: "Queue residency",
    },
    EventGroup {
        gid: 0x8003,
        name: "retry",
        description: "Link retry events",
    },
    EventGroup {
        gid: 0x8004,
        name: "throttle",
        description: "Throttling events",
    },
];

/// The CXL-defined named events, in the kernel's order.
pub const EVENTS: &[KnownEvent] = &[
    KnownEvent {
        name: "clock_ticks",
        gid: 0x0000,
        mask: 0x00000001,
        description: "Clock ticks of the CPMU counter clock",
    },
    KnownEvent {
        name: "d2h_req_rdcurr",
        gid: 0x0010,
        mask: 0x00000002,
        description: "D2H request RdCurr",
    },
    KnownEvent {
        name: "d2h_req_rdown",
        gid: 0x0010,
        mask: 0x00000004,
        description: "D2H request RdOwn",
    },
    KnownEvent {
        name: "d2h_req_rdshared",
        gid: 0x0010,
        mask: 0x00000008,
        description: "D2H request RdShared",
    },
    KnownEvent {
        name: "d2h_req_rdany",
        gid: 0x0010,
        mask: 0x00000010,
        description: "D2H request RdAny",
    },
    KnownEvent {
        name: "d2h_req_rdownnodata",
        gid: 0x0010,
        mask: 0x00000020,
        description: "D2H request RdOwnNoData",
    },
    KnownEvent {
        name: "d2h_req_itomwr",
        gid: 0x0010,
        mask: 0x00000040,
        description: "D2H request ItoMWr",
    },
    KnownEvent {
        name: "d2h_req_wrcurr",
        gid: 0x0010,
        mask: 0x00000080,
        description: "D2H request WrCur",
    },
    KnownEvent {
        name: "d2h_req_clflush",
        gid: 0x0010,
        mask: 0x00000100,
        description: "D2H request CLFlush",
    },
    KnownEvent {
        name: "d2h_req_cleanevict",
        gid: 0x0010,
        mask: 0x00000200,
        description: "D2H request CleanEvict",
    },
    KnownEvent {
        name: "d2h_req_dirtyevict",
        gid: 0x0010,
        mask: 0x00000400,
        description: "D2H request DirtyEvict",
    },
    KnownEvent {
        name: "d2h_req_cleanevictnodata",
        gid: 0x0010,
        mask: 0x00000800,
        description: "D2H request CleanEvictNoData",
    },
    KnownEvent {
        name: "d2h_req_wowrinv",
        gid: 0x0010,
        mask: 0x00001000,
        description: "D2H request WOWrInv",
    },
    KnownEvent {
        name: "d2h_req_wowrinvf",
        gid: 0x0010,
        mask: 0x00002000,
        description: "D2H request WOWrInvF",
    },
    KnownEvent {
        name: "d2h_req_wrinv",
        gid: 0x0010,
        mask: 0x00004000,
        description: "D2H request WrInv",
    },
    KnownEvent {
        name: "d2h_req_cacheflushed",
        gid: 0x0010,
        mask: 0x00010000,
        description: "D2H request CacheFlushed",
    },
    KnownEvent {
        name: "d2h_rsp_rspihiti",
        gid: 0x0011,
        mask: 0x00000010,
        description: "D2H response RspIHitI",
    },
    KnownEvent {
        name: "d2h_rsp_rspvhitv",
        gid: 0x0011,
        mask: 0x00000040,
        description: "D2H response RspVHitV",
    },
    KnownEvent {
        name: "d2h_rsp_rspihitse",
        gid: 0x0011,
        mask: 0x00000020,
        description: "D2H response RspIHitSE",
    },
    KnownEvent {
        name: "d2h_rsp_rspshitse",
        gid: 0x0011,
        mask: 0x00000002,
        description: "D2H response RspSHitSE",
    },
    KnownEvent {
        name: "d2h_rsp_rspsfwdm",
        gid: 0x0011,
        mask: 0x00000080,
        description: "D2H response RspSFwdM",
    },
    KnownEvent {
        name: "d2h_rsp_rspifwdm",
        gid: 0x0011,
        mask: 0x00008000,
        description: "D2H response RspIFwdM",
    },
    KnownEvent {
        name: "d2h_rsp_rspvfwdv",
        gid: 0x0011,
        mask: 0x00400000,
        description: "D2H response RspVFwdV",
    },
    KnownEvent {
        name: "h2d_req_snpdata",
        gid: 0x0012,
        mask: 0x00000002,
        description: "H2D request SnpData",
    },
    KnownEvent {
        name: "h2d_req_snpinv",
        gid: 0x0012,
        mask: 0x00000004,
        description: "H2D request SnpInv",
    },
    KnownEvent {
        name: "h2d_req_snpcur",
        gid: 0x0012,
        mask: 0x00000008,
        description: "H2D request SnpCur",
    },
    KnownEvent {
        name: "h2d_rsp_writepull",
        gid: 0x0013,
        mask: 0x00000002,
        description: "H2D response WritePull",
    },
    KnownEvent {
        name: "h2d_rsp_go",
        gid: 0x0013,
        mask: 0x00000010,
        description: "H2D response GO",
    },
    KnownEvent {
        name: "h2d_rsp_gowritepull",
        gid: 0x0013,
        mask: 0x00000020,
        description: "H2D response GO_WritePull",
    },
    KnownEvent {
        name: "h2d_rsp_extcmp",
        gid: 0x0013,
        mask: 0x00000040,
        description: "H2D response ExtCmp",
    },
    KnownEvent {
        name: "h2d_rsp_gowritepulldrop",
        gid: 0x0013,
        mask: 0x00000100,
        description: "H2D response GO_WritePull_Drop",
    },
    KnownEvent {
        name: "h2d_rsp_fastgowritepull",
        gid: 0x0013,
        mask: 0x00002000,
        description: "H2D response Fast_GO_WritePull",
    },
    KnownEvent {
        name: "h2d_rsp_goerrwritepull",
        gid: 0x0013,
        mask: 0x00008000,
        description: "H2D response GO_ERR_WritePull",
    },
    KnownEvent {
        name: "cachedata_d2h_data",
        gid: 0x0014,
        mask: 0x00000001,
        description: "Device-to-host cache data transfers",
    },
    KnownEvent {
        name: "cachedata_h2d_data",
        gid: 0x0014,
        mask: 0x00000002,
        description: "Host-to-device cache data transfers",
    },
    KnownEvent {
        name: "m2s_req_meminv",
        gid: 0x0020,
        mask: 0x00000001,
        description: "M2S Req MemInv",
    },
    KnownEvent {
        name: "m2s_req_memrd",
        gid: 0x0020,
        mask: 0x00000002,
        description: "M2S Req MemRd",
    },
    KnownEvent {
        name: "m2s_req_memrddata",
        gid: 0x0020,
        mask: 0x00000004,
        description: "M2S Req MemRdData",
    },
    KnownEvent {
        name: "m2s_req_memrdfwd",
        gid: 0x0020,
        mask: 0x00000008,
        description: "M2S Req MemRdFwd",
    },
    KnownEvent {
        name: "m2s_req_memwrfwd",
        gid: 0x0020,
        mask: 0x00000010,
        description: "M2S Req MemWrFwd",
    },
    KnownEvent {
        name: "m2s_req_memrdtee",
        gid: 0x0020,
        mask: 0x00000020,
        description: "M2S Req MemRdTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_memrddatatee",
        gid: 0x0020,
        mask: 0x00000040,
        description: "M2S Req MemRdDataTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_meminvtee",
        gid: 0x0020,
        mask: 0x00000080,
        description: "M2S Req MemInvTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_memspecrd",
        gid: 0x0020,
        mask: 0x00000100,
        description: "M2S Req MemSpecRd",
    },
    KnownEvent {
        name: "m2s_req_meminvnt",
        gid: 0x0020,
        mask: 0x00000200,
        description: "M2S Req MemInvNT",
    },
    KnownEvent {
        name: "m2s_req_memcleanevict",
        gid: 0x0020,
        mask: 0x00000400,
        description: "M2S Req MemClnEvct",
    },
    KnownEvent {
        name: "m2s_req_meminvptee",
        gid: 0x0020,
        mask: 0x00000800,
        description: "M2S Req MemInvPTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_memspecrdtee",
        gid: 0x0020,
        mask: 0x00001000,
        description: "M2S Req MemSpecRdTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_teupdate",
        gid: 0x0020,
        mask: 0x00002000,
        description: "M2S Req TEUpdate (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_memclnevcttee",
        gid: 0x0020,
        mask: 0x00004000,
        description: "M2S Req MemClnEvctTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_req_memclnevctu",
        gid: 0x0020,
        mask: 0x00008000,
        description: "M2S Req MemClnEvctU (newer kernels)",
    },
    KnownEvent {
        name: "m2s_rwd_memwr",
        gid: 0x0021,
        mask: 0x00000002,
        description: "M2S RwD MemWr",
    },
    KnownEvent {
        name: "m2s_rwd_memwrptl",
        gid: 0x0021,
        mask: 0x00000004,
        description: "M2S RwD MemWrPtl",
    },
    KnownEvent {
        name: "m2s_rwd_biconflict",
        gid: 0x0021,
        mask: 0x00000010,
        description: "M2S RwD BIConflict",
    },
    KnownEvent {
        name: "m2s_rwd_memrdfill",
        gid: 0x0021,
        mask: 0x00000020,
        description: "M2S RwD MemRdFill (newer kernels)",
    },
    KnownEvent {
        name: "m2s_rwd_memwrtee",
        gid: 0x0021,
        mask: 0x00000200,
        description: "M2S RwD MemWrTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_rwd_memwrptltee",
        gid: 0x0021,
        mask: 0x00000400,
        description: "M2S RwD MemWrPtlTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_rwd_memrdfilltee",
        gid: 0x0021,
        mask: 0x00002000,
        description: "M2S RwD MemRdFillTEE (newer kernels)",
    },
    KnownEvent {
        name: "m2s_birsp_i",
        gid: 0x0022,
        mask: 0x00000001,
        description: "M2S BIRsp BIRspI",
    },
    KnownEvent {
        name: "m2s_birsp_s",
        gid: 0x0022,
        mask: 0x00000002,
        description: "M2S BIRsp BIRspS",
    },
    KnownEvent {
        name: "m2s_birsp_e",
        gid: 0x0022,
        mask: 0x00000004,
        description: "M2S BIRsp BIRspE",
    },
    KnownEvent {
        name: "m2s_birsp_iblk",
        gid: 0x0022,
        mask: 0x00000010,
        description: "M2S BIRsp BIRspIBlk",
    },
    KnownEvent {
        name: "m2s_birsp_sblk",
        gid: 0x0022,
        mask: 0x00000020,
        description: "M2S BIRsp BIRspSBlk",
    },
    KnownEvent {
        name: "m2s_birsp_eblk",
        gid: 0x0022,
        mask: 0x00000040,
        description: "M2S BIRsp BIRspEBlk",
    },
    KnownEvent {
        name: "s2m_bisnp_cur",
        gid: 0x0023,
        mask: 0x00000001,
        description: "S2M BISnp BISnpCur",
    },
    KnownEvent {
        name: "s2m_bisnp_data",
        gid: 0x0023,
        mask: 0x00000002,
        description: "S2M BISnp BISnpData",
    },
    KnownEvent {
        name: "s2m_bisnp_inv",
        gid: 0x0023,
        mask: 0x00000004,
        description: "S2M BISnp BISnpInv",
    },
    KnownEvent {
        name: "s2m_bisnp_curblk",
        gid: 0x0023,
        mask: 0x00000010,
        description: "S2M BISnp BISnpCurBlk",
    },
    KnownEvent {
        name: "s2m_bisnp_datblk",
        gid: 0x0023,
        mask: 0x00000020,
        description: "S2M BISnp BISnpDataBlk",
    },
    KnownEvent {
        name: "s2m_bisnp_invblk",
        gid: 0x0023,
        mask: 0x00000040,
        description: "S2M BISnp BISnpInvBlk",
    },
    KnownEvent {
        name: "s2m_bisnp_curtee",
        gid: 0x0023,
        mask: 0x00000100,
        description: "S2M BISnp BISnpCurTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_bisnp_datatee",
        gid: 0x0023,
        mask: 0x00000200,
        description: "S2M BISnp BISnpDataTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_bisnp_invtee",
        gid: 0x0023,
        mask: 0x00000400,
        description: "S2M BISnp BISnpInvTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_bisnp_curblktee",
        gid: 0x0023,
        mask: 0x00001000,
        description: "S2M BISnp BISnpCurBlkTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_bisnp_datablktee",
        gid: 0x0023,
        mask: 0x00002000,
        description: "S2M BISnp BISnpDataBlkTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_bisnp_invblktee",
        gid: 0x0023,
        mask: 0x00004000,
        description: "S2M BISnp BISnpInvBlkTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_ndr_cmp",
        gid: 0x0024,
        mask: 0x00000001,
        description: "S2M NDR Cmp",
    },
    KnownEvent {
        name: "s2m_ndr_cmps",
        gid: 0x0024,
        mask: 0x00000002,
        description: "S2M NDR Cmp-S",
    },
    KnownEvent {
        name: "s2m_ndr_cmpe",
        gid: 0x0024,
        mask: 0x00000004,
        description: "S2M NDR Cmp-E",
    },
    KnownEvent {
        name: "s2m_ndr_cmpm",
        gid: 0x0024,
        mask: 0x00000008,
        description: "S2M NDR Cmp-M (newer kernels)",
    },
    KnownEvent {
        name: "s2m_ndr_biconflictack",
        gid: 0x0024,
        mask: 0x00000010,
        description: "S2M NDR BIConflictAck (bit 3 before Linux 6.8)",
    },
    KnownEvent {
        name: "s2m_ndr_cmptee",
        gid: 0x0024,
        mask: 0x00000020,
        description: "S2M NDR CmpTEE (newer kernels)",
    },
    KnownEvent {
        name: "s2m_ndr_cmptee_s",
        gid: 0x0024,
        mask: 0x00000040,
        description: "S2M NDR CmpTEE-S (newer kernels)",
    },
    KnownEvent {
        name: "s2m_ndr_cmptee_e",
        gid: 0x0024,
        mask: 0x00000080,
        description: "S2M NDR CmpTEE-E (newer kernels)",
    },
    KnownEvent {
        name: "s2m_drs_memdata",
        gid: 0x0025,
        mask: 0x00000001,
        description: "S2M DRS MemData",
    },
    KnownEvent {
        name: "s2m_drs_memdatanxm",
        gid: 0x0025,
        mask: 0x00000002,
        description: "S2M DRS MemData-NXM",
    },
    KnownEvent {
        name: "s2m_drs_memdatatee",
        gid: 0x0025,
        mask: 0x00000004,
        description: "S2M DRS MemDataTEE (newer kernels)",
    },
    KnownEvent {
        name: "ddr_act",
        gid: 0x8000,
        mask: 0x00000001,
        description: "DDR ACT (row activate) commands",
    },
    KnownEvent {
        name: "ddr_pre",
        gid: 0x8000,
        mask: 0x00000002,
        description: "DDR PRE (precharge) commands",
    },
    KnownEvent {
        name: "ddr_casrd",
        gid: 0x8000,
        mask: 0x00000004,
        description: "DDR CAS read commands",
    },
    KnownEvent {
        name: "ddr_caswr",
        gid: 0x8000,
        mask: 0x00000008,
        description: "DDR CAS write commands",
    },
    KnownEvent {
        name: "ddr_refresh",
        gid: 0x8000,
        mask: 0x00000010,
        description: "DDR refresh commands",
    },
    KnownEvent {
        name: "ddr_selfrefreshent",
        gid: 0x8000,
        mask: 0x00000020,
        description: "DDR self-refresh entries",
    },
    KnownEvent {
        name: "ddr_rfm",
        gid: 0x8000,
        mask: 0x00000040,
        description: "DDR refresh management (RFM) commands",
    },
    KnownEvent {
        name: "ddr_cas_rd_ap",
        gid: 0x8000,
        mask: 0x00000080,
        description: "DDR CAS reads with auto-precharge (newer kernels)",
    },
    KnownEvent {
        name: "ddr_cas_wr_ap",
        gid: 0x8000,
        mask: 0x00000100,
        description: "DDR CAS writes with auto-precharge (newer kernels)",
    },
    KnownEvent {
        name: "ddr_refresh_all_banks",
        gid: 0x8000,
        mask: 0x00000200,
        description: "DDR all-bank refreshes (newer kernels)",
    },
    KnownEvent {
        name: "ddr_refresh_same_bank",
        gid: 0x8000,
        mask: 0x00000400,
        description: "DDR same-bank refreshes (newer kernels)",
    },
    KnownEvent {
        name: "ddr_pwrdn_entry",
        gid: 0x8000,
        mask: 0x00000800,
        description: "DDR power-down entries (newer kernels)",
    },
    KnownEvent {
        name: "ddr_pwrdn_exit",
        gid: 0x8000,
        mask: 0x00001000,
        description: "DDR power-down exits (newer kernels)",
    },
    KnownEvent {
        name: "ddr_rd_wr_ddr_bus_switching",
        gid: 0x8000,
        mask: 0x00002000,
        description: "DDR bus read/write turnarounds (newer kernels)",
    },
    KnownEvent {
        name: "ddr_incoming_rd_req",
        gid: 0x8000,
        mask: 0x00004000,
        description: "Read requests arriving at the DDR controller (newer kernels)",
    },
    KnownEvent {
        name: "ddr_incoming_wr_req",
        gid: 0x8000,
        mask: 0x00008000,
        description: "Write requests arriving at the DDR controller (newer kernels)",
    },
    KnownEvent {
        name: "rd_queue_occ",
        gid: 0x8001,
        mask: 0x00000001,
        description: "Read queue occupancy (newer kernels)",
    },
    KnownEvent {
        name: "wr_queue_occ",
        gid: 0x8001,
        mask: 0x00000002,
        description: "Write queue occupancy (newer kernels)",
    },
    KnownEvent {
        name: "rd_wr_merged_queue_occ",
        gid: 0x8001,
        mask: 0x00000004,
        description: "Merged read/write queue occupancy (newer kernels)",
    },
    KnownEvent {
        name: "pwrdn_event",
        gid: 0x8001,
        mask: 0x00000008,
        description: "Power-down events (queue occupancy group) (newer kernels)",
    },
    KnownEvent {
        name: "mc_rd_resid_cnt",
        gid: 0x8002,
        mask: 0x00000001,
        description: "Memory controller read queue residency (newer kernels)",
    },
    KnownEvent {
        name: "mc_wr_resid_cnt",
        gid: 0x8002,
        mask: 0x00000002,
        description: "Memory controller write queue residency (newer kernels)",
    },
    KnownEvent {
        name: "retry_event_trig_by_rd_crc",
        gid: 0x8003,
        mask: 0x00000001,
        description: "Retries triggered by a read CRC error (newer kernels)",
    },
    KnownEvent {
        name: "retry_event_trig_by_wr_crc",
        gid: 0x8003,
        mask: 0x00000002,
        description: "Retries triggered by a write CRC error (newer kernels)",
    },
    KnownEvent {
        name: "retry_event_trig_by_ca_parity",
        gid: 0x8003,
        mask: 0x00000004,
        description: "Retries triggered by a command/address parity error (newer kernels)",
    },
    KnownEvent {
        name: "retry_event_trig_by_ecc",
        gid: 0x8003,
        mask: 0x00000008,
        description: "Retries triggered by an ECC error (newer kernels)",
    },
    KnownEvent {
        name: "thermal_throttle_event",
        gid: 0x8004,
        mask: 0x00000001,
        description: "Thermal throttling events (newer kernels)",
    },
    KnownEvent {
        name: "power_throttle_event",
        gid: 0x8004,
        mask: 0x00000002,
        description: "Power throttling events (newer kernels)",
    },
];

/// The group with this ID, for CXL-defined events.
pub fn group(gid: u16) -> Option<&'static EventGroup> {
    GROUPS.iter().find(|g| g.gid == gid)
}

/// The named event with this name, in any case (perf matches event names
/// with `strcasecmp`).
pub fn event(name: &str) -> Option<&'static KnownEvent> {
    EVENTS.iter().find(|e| e.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_one_mask_bit_in_a_known_group_with_a_unique_name() {
        for (i, e) in EVENTS.iter().enumerate() {
            assert_eq!(e.mask.count_ones(), 1, "{}", e.name);
            assert!(group(e.gid).is_some(), "{}", e.name);
            assert!(EVENTS[..i].iter().all(|o| o.name != e.name), "{}", e.name);
            assert!(!e.description.is_empty());
        }
        assert_eq!(EVENTS.len(), 115);
        assert_eq!(
            event("d2h_rsp_rspvfwdv").map(|e| (e.gid, e.mask)),
            Some((0x11, 1 << 22))
        );
        assert_eq!(event("s2m_ndr_biconflictack").map(|e| e.mask), Some(1 << 4));
    }
}
