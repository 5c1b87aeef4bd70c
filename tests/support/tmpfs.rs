//! A small tmpfs of a test's own, to run out of space on purpose; unmounted
//! and removed on drop.
#![allow(dead_code)]

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
};

use nix::{
    mount::{mount, umount2, MntFlags, MsFlags},
    sys::statvfs::statvfs,
};

/// A tmpfs mounted on a directory of its own.
pub struct Tmpfs {
    pub dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `bytes` (rounded up to pages) on a new directory.
    pub fn mount(name: &str, bytes: u64) -> Self {
        let dir = std::env::temp_dir().join(format!("linerate-{name}-{}", std::process::id()));
        let _ = umount2(&dir, MntFlags::MNT_DETACH);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        mount(
            Some("tmpfs"),
            &dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some(format!("size={bytes},mode=0700").as_str()),
        )
        .unwrap_or_else(|e| panic!("mounting a tmpfs on {}: {e}", dir.display()));
        Self { dir }
    }

    /// Free bytes.
    pub fn free(&self) -> u64 {
        let s = statvfs(&self.dir).unwrap();
        s.blocks_available() * s.fragment_size()
    }

    /// Writes a filler file (`filler-N`) that leaves `leave` bytes free
    /// (a multiple of the page size); returns its path.
    pub fn fill(&self, leave: u64) -> PathBuf {
        let mut n = 0;
        let path = loop {
            let p = self.dir.join(format!("filler-{n}"));
            if !p.exists() {
                break p;
            }
            n += 1;
        };
        let want = self
            .free()
            .checked_sub(leave)
            .expect("less free than asked to leave");
        let mut f = fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        let mut left = want;
        while left > 0 {
            let k = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..k]).unwrap();
            left -= k as u64;
        }
        f.sync_all().unwrap();
        assert_eq!(self.free(), leave, "the filler leaves what was asked");
        path
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = umount2(Path::new(&self.dir), MntFlags::MNT_DETACH);
        let _ = fs::remove_dir_all(&self.dir);
    }
}
