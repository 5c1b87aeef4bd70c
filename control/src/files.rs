//! The files linerate writes and reads as root, and the one way each is
//! opened: nothing through a symbolic link (`O_NOFOLLOW`), new files
//! created exclusively (`O_EXCL`), whole files written under an
//! unpredictable name in the same directory then renamed over the old,
//! only regular files read (a FIFO or `/dev/zero` is refused, and a size
//! cap names the file), output directories only their owner can write
//! (as ssh's StrictModes), and a dangling link counted as present.

use std::{
    fs::{self, File, OpenOptions, Permissions},
    io::{self, Read, Write},
    os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

/// Reports, figures, results: readable by all.
pub const PUBLIC: u32 = 0o644;
/// What only its owner reads (a torn record kept aside).
pub const PRIVATE: u32 = 0o600;

/// A file that is not written or read as asked, or that is refused.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// A file could not be written.
    #[error("writing {} failed: {error}{}", path.display(), space_hint(error))]
    Write {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        error: io::Error,
    },
    /// A file could not be read.
    #[error("reading {} failed: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the kernel said.
        error: io::Error,
    },
    /// A file or directory linerate will not use, and why.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The file or directory.
        path: PathBuf,
        /// Why, and what to do.
        why: String,
    },
}

fn space_hint(e: &io::Error) -> &'static str {
    // (tempfile's errors of creating a file carry the kind, not the errno.)
    match e.kind() {
        io::ErrorKind::StorageFull => ": free some space",
        io::ErrorKind::FileTooLarge => ": the file size limit (ulimit -f) is too low",
        _ => "",
    }
}

fn refused(path: &Path, why: impl Into<String>) -> FileError {
    FileError::Refused {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// The error of opening `path` with `O_NOFOLLOW`: a link is refused.
fn open_error(path: &Path, error: io::Error, write: bool) -> FileError {
    if error.raw_os_error() == Some(libc::ELOOP) {
        return refused(
            path,
            "is a symbolic link: linerate writes and reads no file through a link; remove it, or give the file itself",
        );
    }
    if write {
        FileError::Write {
            path: path.to_path_buf(),
            error,
        }
    } else {
        FileError::Read {
            path: path.to_path_buf(),
            error,
        }
    }
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Whether anything is at `path`, a dangling link included.
pub fn exists(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(_) => true,
        Err(e) => e.kind() != io::ErrorKind::NotFound,
    }
}

/// What a file that is not a regular file is, for messages.
fn kind(m: &fs::Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Refuses an open file that is not a regular file, or (with `owned`)
/// that belongs to another user.
fn check_open(path: &Path, f: &File, owned: bool, write: bool) -> Result<fs::Metadata, FileError> {
    let m = f.metadata().map_err(|e| open_error(path, e, write))?;
    if !m.file_type().is_file() {
        return Err(refused(
            path,
            format!(
                "is {}: linerate uses regular files only; remove it or give another name",
                kind(&m)
            ),
        ));
    }
    if owned && m.uid() != euid() {
        return Err(refused(
            path,
            format!(
                "belongs to uid {}, not to the user running linerate (uid {}): a file another user prepared is not used; check it, then `chown` it or start again in a new directory",
                m.uid(),
                euid()
            ),
        ));
    }
    Ok(m)
}

/// Refuses `dir` as an output directory unless only the user running
/// linerate can write it (as ssh's StrictModes): owned by the effective
/// uid, not writable by its group or others; a symbolic link to it must
/// be that user's too.
pub fn check_output_dir(dir: &Path) -> Result<(), FileError> {
    let read = |error| FileError::Read {
        path: dir.to_path_buf(),
        error,
    };
    let me = euid();
    let link = fs::symlink_metadata(dir).map_err(read)?;
    if link.file_type().is_symlink() && link.uid() != me {
        return Err(refused(
            dir,
            format!(
                "is a symbolic link owned by uid {}, not by the user running linerate (uid {me}): give the directory itself",
                link.uid()
            ),
        ));
    }
    let m = fs::metadata(dir).map_err(read)?;
    if !m.is_dir() {
        return Err(refused(dir, format!("is {}, not a directory", kind(&m))));
    }
    if m.uid() != me {
        return Err(refused(
            dir,
            format!(
                "belongs to uid {}, not to the user running linerate (uid {me}): its owner could plant links where linerate writes; give a directory of your own",
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refused(
            dir,
            format!(
                "can be written by its group or by others (mode {:o}): another user could plant links where linerate writes; `chmod go-w` it, or give a directory only you can write",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Replaces `path` with `bytes` whole (mode `mode`): written under an
/// unpredictable name in the same directory, created exclusively, flushed,
/// then renamed over `path` (a link there is replaced, never followed). A
/// reader (or a crash) sees the old file or the new one.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FileError> {
    let err = |error| FileError::Write {
        path: path.to_path_buf(),
        error,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)
        .map_err(err)?;
    // (Through the File: the kernel's error as it is.)
    tmp.as_file_mut().write_all(bytes).map_err(err)?;
    tmp.as_file().sync_data().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    sync_dir(dir);
    Ok(())
}

/// Makes a rename or a new file in `dir` durable.
fn sync_dir(dir: &Path) {
    if let Ok(f) = File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Opens `path` for appending, created (mode 0644) if absent: never
/// through a link, only a regular file of the user running linerate.
pub fn open_append(path: &Path) -> Result<File, FileError> {
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(PUBLIC)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e, true))?;
    check_open(path, &f, true, true)?;
    if let Some(d) = path.parent() {
        sync_dir(if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        });
    }
    Ok(f)
}

/// Opens the existing `path` for writing (not cut): never through a link,
/// only a regular file of the user running linerate.
pub fn open_existing(path: &Path) -> Result<File, FileError> {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(path, e, true))?;
    check_open(path, &f, true, true)?;
    Ok(f)
}

/// Creates `path` exclusively (mode 0644), never through a link; an
/// existing file is refused, except `/dev/null`, which is opened as it is.
pub fn create_new(path: &Path) -> Result<File, FileError> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PUBLIC)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let m = fs::symlink_metadata(path).map_err(|e| open_error(path, e, true))?;
            if is_dev_null(&m) {
                return OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                    .open(path)
                    .map_err(|e| open_error(path, e, true));
            }
            let what = if m.file_type().is_file() {
                "already exists: linerate does not replace it; remove it or give another name"
                    .to_string()
            } else {
                format!(
                    "is {}: linerate writes a new regular file only (or /dev/null); give another name",
                    kind(&m)
                )
            };
            Err(refused(path, what))
        }
        Err(e) => Err(open_error(path, e, true)),
    }
}

/// Whether `m` is the null device (character device 1:3).
fn is_dev_null(m: &fs::Metadata) -> bool {
    m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3)
}

/// The bytes of the regular file `path`, at most `cap` of them (None: no
/// such file; a dangling link is not absence, it is refused). With
/// `owned`, a file of another user is refused too.
pub fn read_regular(path: &Path, cap: u64, owned: bool) -> Result<Option<Vec<u8>>, FileError> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(open_error(path, e, false)),
    };
    let m = check_open(path, &f, owned, false)?;
    let too_big = || {
        refused(
            path,
            format!("is larger than the {cap} bytes linerate reads of it"),
        )
    };
    if m.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| FileError::Read {
            path: path.to_path_buf(),
            error,
        })?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(Some(bytes))
}

/// [`read_regular`] as text; a missing file is an error too.
pub fn read_text(path: &Path, cap: u64, owned: bool) -> Result<String, FileError> {
    let bytes = read_regular(path, cap, owned)?.ok_or_else(|| FileError::Read {
        path: path.to_path_buf(),
        error: io::ErrorKind::NotFound.into(),
    })?;
    String::from_utf8(bytes).map_err(|e| FileError::Read {
        path: path.to_path_buf(),
        error: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("linerate-files-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, Permissions::from_mode(0o755)).unwrap();
        d
    }

    #[test]
    fn a_link_planted_at_the_old_temporary_name_is_not_followed() {
        let d = tmp("planted");
        let victim = d.join("victim");
        fs::write(&victim, "keep").unwrap();
        for name in [".report.html.tmp", ".report.html..tmp"] {
            symlink(&victim, d.join(name)).unwrap();
        }
        write_atomic(&d.join("report.html"), b"new", PUBLIC).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(d.join("report.html")).unwrap(), "new");
        let m = fs::symlink_metadata(d.join("report.html")).unwrap();
        assert!(m.file_type().is_file());
        assert_eq!(m.mode() & 0o777, 0o644);
        // A link at the name itself is replaced, not written through.
        symlink(&victim, d.join("spec.toml")).unwrap();
        write_atomic(&d.join("spec.toml"), b"s", PRIVATE).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        let m = fs::symlink_metadata(d.join("spec.toml")).unwrap();
        assert_eq!((m.file_type().is_file(), m.mode() & 0o777), (true, 0o600));
        // Appending through a link is refused.
        symlink(&victim, d.join("results.jsonl")).unwrap();
        let e = open_append(&d.join("results.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("results.jsonl: is a symbolic link"), "{e}");
        assert!(open_existing(&d.join("results.jsonl")).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn a_dangling_link_is_present() {
        let d = tmp("dangling");
        let l = d.join("results.jsonl");
        let target = d.join("target");
        symlink(&target, &l).unwrap();
        assert!(exists(&l));
        assert!(!exists(&d.join("none")));
        assert!(read_regular(&l, 100, false).is_err());
        assert!(open_append(&l).is_err());
        assert!(create_new(&l).is_err());
        assert!(!exists(&target), "the link's target is not created");
        assert_eq!(read_regular(&d.join("none"), 100, false).unwrap(), None);
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn only_regular_files_are_read_and_with_a_cap() {
        let d = tmp("regular");
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = read_regular(&fifo, 100, false).unwrap_err().to_string();
        assert!(
            e.ends_with(
                "fifo: is a FIFO: linerate uses regular files only; remove it or give another name"
            ),
            "{e}"
        );
        let e = read_regular(Path::new("/dev/zero"), 100, false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/dev/zero: is a character device"), "{e}");
        let zero = d.join("zero");
        symlink("/dev/zero", &zero).unwrap();
        let e = read_regular(&zero, 100, false).unwrap_err().to_string();
        assert!(e.contains("zero: is a symbolic link"), "{e}");
        let big = d.join("big");
        fs::write(&big, [b'x'; 101]).unwrap();
        let e = read_regular(&big, 100, false).unwrap_err().to_string();
        assert!(
            e.ends_with("big: is larger than the 100 bytes linerate reads of it"),
            "{e}"
        );
        assert_eq!(read_regular(&big, 101, true).unwrap().unwrap().len(), 101);
        // Someone else's file, where only one's own is used.
        nix::unistd::chown(&big, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        assert!(read_regular(&big, 101, false).is_ok());
        let e = read_regular(&big, 101, true).unwrap_err().to_string();
        assert!(e.contains("big: belongs to uid 65534"), "{e}");
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn output_directories_only_their_owner_can_write() {
        let d = tmp("dirs");
        check_output_dir(&d).unwrap();
        for (mode, ok) in [
            (0o775, false),
            (0o757, false),
            (0o1777, false),
            (0o700, true),
        ] {
            fs::set_permissions(&d, Permissions::from_mode(mode)).unwrap();
            let r = check_output_dir(&d);
            assert_eq!(r.is_ok(), ok, "mode {mode:o}: {r:?}");
            if let Err(e) = r {
                assert!(
                    e.to_string()
                        .contains("can be written by its group or by others"),
                    "{e}"
                );
            }
        }
        let other = d.join("other");
        fs::create_dir(&other).unwrap();
        fs::set_permissions(&other, Permissions::from_mode(0o755)).unwrap();
        nix::unistd::chown(&other, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let e = check_output_dir(&other).unwrap_err().to_string();
        assert!(
            e.contains("other: belongs to uid 65534, not to the user running linerate"),
            "{e}"
        );
        let file = d.join("file");
        fs::write(&file, "").unwrap();
        assert!(check_output_dir(&file)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    fn new_files_are_created_exclusively_and_dev_null_is_taken() {
        let d = tmp("new");
        let p = d.join("a.pcapng");
        create_new(&p).unwrap().write_all(b"x").unwrap();
        let e = create_new(&p).unwrap_err().to_string();
        assert!(
            e.contains("a.pcapng: already exists: linerate does not replace it"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), "x");
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = create_new(&fifo).unwrap_err().to_string();
        assert!(
            e.contains("fifo: is a FIFO: linerate writes a new regular file only"),
            "{e}"
        );
        create_new(Path::new("/dev/null"))
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert!(create_new(Path::new("/dev/zero")).is_err());
        let _ = fs::remove_dir_all(d);
    }
}
