//! The kernel files of the differential tests' scenarios as a FUSE file
//! system in which every reading process is in a sample of its own:
//! `c<N>/uptime`, `c<N>/stat`, `c<N>/diskstats` and the tree `c<N>/block`
//! (what `/sys/block` holds: `<disk>/stat`, `<disk>/<partition>/stat`) of
//! scenario N, to bind over `/proc/uptime`, `/proc/stat`,
//! `/proc/diskstats` and `/sys/block` in a mount namespace.
//!
//! Both iostats begin each sample by reading `/proc/uptime` from its start
//! (sysstat 12.6.1 opens it again, iostat-rs reads its open descriptor at
//! offset 0; `strace` of `iostat -x 1 3` and `iostat-rs -x 1 3`), so a
//! process's k-th such read moves it to sample k (counting from 0), and
//! every file, directory listing and name it looks up afterwards is sample
//! k's. The two programs therefore read the same samples however late
//! either runs, where rewriting shared files half-way between their reads
//! raced them on a loaded machine. Entries and attributes are never cached
//! by the kernel (timeouts of zero) and files are read directly, so each
//! lookup and read reaches this file system. Both programs read from one
//! thread, so the request's thread id is the process.

use crate::fakekernel::{Scenario, SysBlock};
use crate::fuse::{self, Answer, Attr};
use crate::skip;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// The files of one sample.
struct SampleFiles {
    uptime: String,
    stat: String,
    diskstats: String,
    block: SysBlock,
}

impl SampleFiles {
    fn of(scenario: &Scenario, s: usize) -> SampleFiles {
        SampleFiles {
            uptime: scenario.uptime(s),
            stat: scenario.proc_stat(s),
            diskstats: scenario.diskstats(s),
            block: scenario.sys_block(s),
        }
    }
}

/// A node of the tree; the `usize` is the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Node {
    Root,
    Case(usize),
    Uptime(usize),
    Stat(usize),
    Diskstats(usize),
    Block(usize),
    Disk(usize, String),
    DiskStat(usize, String),
    Partition(usize, String, String),
    PartitionStat(usize, String, String),
}

impl Node {
    fn case(&self) -> Option<usize> {
        match self {
            Node::Root => None,
            Node::Case(c)
            | Node::Uptime(c)
            | Node::Stat(c)
            | Node::Diskstats(c)
            | Node::Block(c)
            | Node::Disk(c, _)
            | Node::DiskStat(c, _)
            | Node::Partition(c, _, _)
            | Node::PartitionStat(c, _, _) => Some(*c),
        }
    }

    fn is_dir(&self) -> bool {
        matches!(
            self,
            Node::Root | Node::Case(_) | Node::Block(_) | Node::Disk(..) | Node::Partition(..)
        )
    }

    fn name(&self) -> String {
        match self {
            Node::Root => String::new(),
            Node::Case(c) => format!("c{c}"),
            Node::Uptime(_) => "uptime".into(),
            Node::Stat(_) | Node::DiskStat(..) | Node::PartitionStat(..) => "stat".into(),
            Node::Diskstats(_) => "diskstats".into(),
            Node::Block(_) => "block".into(),
            Node::Disk(_, d) => d.clone(),
            Node::Partition(_, _, p) => p.clone(),
        }
    }
}

/// The node `name` in directory `parent` would be, if it existed.
fn child_named(parent: &Node, name: &str) -> Option<Node> {
    Some(match (parent, name) {
        (Node::Root, _) => Node::Case(name.strip_prefix('c')?.parse().ok()?),
        (Node::Case(c), "uptime") => Node::Uptime(*c),
        (Node::Case(c), "stat") => Node::Stat(*c),
        (Node::Case(c), "diskstats") => Node::Diskstats(*c),
        (Node::Case(c), "block") => Node::Block(*c),
        (Node::Block(c), _) => Node::Disk(*c, name.to_string()),
        (Node::Disk(c, d), "stat") => Node::DiskStat(*c, d.clone()),
        (Node::Disk(c, d), _) => Node::Partition(*c, d.clone(), name.to_string()),
        (Node::Partition(c, d, p), "stat") => Node::PartitionStat(*c, d.clone(), p.clone()),
        _ => return None,
    })
}

struct SampleFs {
    /// Per scenario, its samples.
    cases: Vec<Vec<SampleFiles>>,
    /// Inode `i + 1` is `nodes[i]`.
    nodes: Vec<Node>,
    inodes: HashMap<Node, u64>,
    /// Per scenario and process: the reads of `uptime` from its start.
    uptime_reads: Mutex<HashMap<(usize, u32), usize>>,
}

impl SampleFs {
    fn new(scenarios: &[&Scenario]) -> SampleFs {
        let cases: Vec<Vec<SampleFiles>> = scenarios
            .iter()
            .map(|sc| {
                (0..sc.samples.len())
                    .map(|s| SampleFiles::of(sc, s))
                    .collect()
            })
            .collect();
        let mut fs = SampleFs {
            cases: Vec::new(),
            nodes: Vec::new(),
            inodes: HashMap::new(),
            uptime_reads: Mutex::new(HashMap::new()),
        };
        fs.add(Node::Root);
        for (c, samples) in cases.iter().enumerate() {
            for node in [
                Node::Case(c),
                Node::Uptime(c),
                Node::Stat(c),
                Node::Diskstats(c),
                Node::Block(c),
            ] {
                fs.add(node);
            }
            for sample in samples {
                for (disk, (_, partitions)) in &sample.block {
                    fs.add(Node::Disk(c, disk.clone()));
                    fs.add(Node::DiskStat(c, disk.clone()));
                    for p in partitions.keys() {
                        fs.add(Node::Partition(c, disk.clone(), p.clone()));
                        fs.add(Node::PartitionStat(c, disk.clone(), p.clone()));
                    }
                }
            }
        }
        fs.cases = cases;
        fs
    }

    fn add(&mut self, node: Node) {
        if !self.inodes.contains_key(&node) {
            self.nodes.push(node.clone());
            self.inodes.insert(node, self.nodes.len() as u64);
        }
    }

    fn node(&self, ino: u64) -> Option<&Node> {
        let i = ino.checked_sub(1)?;
        self.nodes.get(usize::try_from(i).ok()?)
    }

    /// The sample process `pid` is in, in scenario `case`.
    fn sample(&self, case: usize, pid: u32) -> &SampleFiles {
        let reads = self
            .uptime_reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(case, pid))
            .copied()
            .unwrap_or(0);
        let samples = &self.cases[case];
        &samples[reads.saturating_sub(1).min(samples.len() - 1)]
    }

    /// The text of `node` in `pid`'s sample; `None` for a directory or a
    /// file that sample does not have.
    fn text(&self, node: &Node, pid: u32) -> Option<&str> {
        let case = node.case()?;
        let sample = self.sample(case, pid);
        match node {
            Node::Uptime(_) => Some(&sample.uptime),
            Node::Stat(_) => Some(&sample.stat),
            Node::Diskstats(_) => Some(&sample.diskstats),
            Node::DiskStat(_, d) => sample.block.get(d)?.0.as_deref(),
            Node::PartitionStat(_, d, p) => sample.block.get(d)?.1.get(p).map(String::as_str),
            _ => None,
        }
    }

    /// Whether `node` is in `pid`'s sample.
    fn exists(&self, node: &Node, pid: u32) -> bool {
        let Some(case) = node.case() else {
            return true;
        };
        let sample = self.sample(case, pid);
        match node {
            Node::Disk(_, d) => sample.block.contains_key(d),
            Node::Partition(_, d, p) => sample.block.get(d).is_some_and(|b| b.1.contains_key(p)),
            Node::DiskStat(..) | Node::PartitionStat(..) => self.text(node, pid).is_some(),
            _ => true,
        }
    }

    /// The entries of directory `node` in `pid`'s sample.
    fn children(&self, node: &Node, pid: u32) -> Vec<Node> {
        let all = match node {
            Node::Root => (0..self.cases.len()).map(Node::Case).collect(),
            Node::Case(c) => vec![
                Node::Uptime(*c),
                Node::Stat(*c),
                Node::Diskstats(*c),
                Node::Block(*c),
            ],
            Node::Block(c) => self
                .sample(*c, pid)
                .block
                .keys()
                .map(|d| Node::Disk(*c, d.clone()))
                .collect(),
            Node::Disk(c, d) => {
                let mut v = vec![Node::DiskStat(*c, d.clone())];
                if let Some((_, partitions)) = self.sample(*c, pid).block.get(d) {
                    v.extend(
                        partitions
                            .keys()
                            .map(|p| Node::Partition(*c, d.clone(), p.clone())),
                    );
                }
                v
            }
            Node::Partition(c, d, p) => vec![Node::PartitionStat(*c, d.clone(), p.clone())],
            _ => Vec::new(),
        };
        all.into_iter().filter(|n| self.exists(n, pid)).collect()
    }

    fn attr(&self, node: &Node) -> Attr {
        let dir = node.is_dir();
        Attr {
            ino: self.inodes[node],
            dir,
            perm: if dir { 0o555 } else { 0o444 },
            size: 0,
        }
    }
}

impl fuse::FileSystem for SampleFs {
    fn lookup(&self, pid: u32, parent: u64, name: &[u8]) -> Answer<Attr> {
        self.node(parent)
            .zip(std::str::from_utf8(name).ok())
            .and_then(|(parent, name)| child_named(parent, name))
            .filter(|n| self.inodes.contains_key(n) && self.exists(n, pid))
            .map(|node| self.attr(&node))
            .ok_or(libc::ENOENT)
    }

    fn getattr(&self, pid: u32, ino: u64) -> Answer<Attr> {
        match self.node(ino) {
            Some(node) if self.exists(node, pid) => Ok(self.attr(node)),
            _ => Err(libc::ENOENT),
        }
    }

    fn open(&self, _pid: u32, _ino: u64) -> Answer<(u64, u32)> {
        Ok((0, fuse::FOPEN_DIRECT_IO))
    }

    fn read(&self, pid: u32, ino: u64, _fh: u64, offset: u64, size: u32) -> Answer<Vec<u8>> {
        let node = self.node(ino).ok_or(libc::ENOENT)?;
        if let (Node::Uptime(case), 0) = (node, offset) {
            *self
                .uptime_reads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry((*case, pid))
                .or_default() += 1;
        }
        let text = self.text(node, pid).ok_or(libc::ENOENT)?;
        Ok(fuse::window(text.as_bytes(), offset, size))
    }

    fn readdir(&self, pid: u32, ino: u64) -> Answer<Vec<fuse::DirEntry>> {
        let node = self.node(ino).ok_or(libc::ENOENT)?;
        Ok(self
            .children(node, pid)
            .into_iter()
            .map(|n| fuse::DirEntry {
                ino: self.inodes[&n],
                dir: n.is_dir(),
                name: n.name(),
            })
            .collect())
    }
}

/// The scenarios mounted; unmounted when dropped.
pub struct Mounted(fuse::Mount);

impl Mounted {
    /// Scenario `n`'s directory.
    pub fn case(&self, n: usize) -> PathBuf {
        self.0.root.join(format!("c{n}"))
    }
}

/// Mounts `scenarios` on a fresh directory named after `tag`; `None`, after
/// saying why (a failure under `CI=true`), where FUSE cannot run.
pub fn mount(tag: &str, scenarios: &[&Scenario]) -> Option<Mounted> {
    if let Some(reason) = crate::simkernel::unavailable() {
        skip::skip(&format!("differential ({tag})"), &reason);
        return None;
    }
    let root = std::env::temp_dir().join(format!("hwstat-samples-{}-{tag}", std::process::id()));
    // Some 250 programs read at once, sysstat a file a device: one thread
    // a core would leave them waiting on the file system behind busy loops.
    Some(Mounted(fuse::mount(
        SampleFs::new(scenarios),
        &root,
        "hwstat-samples",
        true,
        4,
    )))
}
