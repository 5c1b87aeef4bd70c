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
/// uid, not writable by its group or others; and every folder above it
/// only that user or root can write (a sticky one, as /tmp, too: there
/// only an entry's owner moves it), so that no one else can move what
/// linerate writes beneath it elsewhere. A symbolic link on the way is
/// followed when it is that user's or root's, in such a folder.
pub fn check_output_dir(dir: &Path) -> Result<(), FileError> {
    walk_output_dir(dir, false)
}

/// Creates the output directory `dir` (mode 0755, less with the umask)
/// and its missing parents, each beneath its parent opened by descriptor
/// (no path looked up twice: nothing can be swapped in between), then
/// checks it as [`check_output_dir`] does.
pub fn create_output_dir(dir: &Path) -> Result<(), FileError> {
    walk_output_dir(dir, true)
}

/// The path of `name` beneath the directory open as `at` (the kernel's
/// link to that very directory, whatever its path has become since).
fn beneath(at: &File, name: &std::ffi::OsStr) -> PathBuf {
    use std::os::fd::AsRawFd;
    Path::new("/proc/self/fd")
        .join(at.as_raw_fd().to_string())
        .join(name)
}

/// Opens `path` as a place (`O_PATH`), never through a link at its end.
fn open_place(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
        .open(path)
}

/// Refuses a folder above an output directory that someone other than the
/// user running linerate or root can write.
fn check_above(dir: &Path, at: &Path, m: &fs::Metadata) -> Result<(), FileError> {
    let me = euid();
    if m.uid() != me && m.uid() != 0 {
        return Err(refused(
            dir,
            format!(
                "is beneath {}, which belongs to uid {} (mode {:o}): its owner could move what linerate writes there elsewhere; give a directory beneath folders only you or root can write",
                at.display(),
                m.uid(),
                m.mode() & 0o7777
            ),
        ));
    }
    if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
        return Err(refused(
            dir,
            format!(
                "is beneath {}, which its group or others can write (mode {:o}): they could move what linerate writes there elsewhere; `chmod go-w` it (or `chmod +t`), or give another directory",
                at.display(),
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Walks to `dir` one folder at a time, each opened beneath the last by
/// descriptor, checking every folder passed; with `create`, a missing one
/// is made there.
fn walk_output_dir(dir: &Path, create: bool) -> Result<(), FileError> {
    let read = |error| FileError::Read {
        path: dir.to_path_buf(),
        error,
    };
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().map_err(read)?.join(dir)
    };
    let me = euid();
    let mut todo = names(&abs);
    let mut at = open_place(Path::new("/")).map_err(read)?;
    let mut shown = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = todo.pop() {
        let above = at.metadata().map_err(read)?;
        check_above(dir, &shown, &above)?;
        let place = beneath(&at, &name);
        let f = match open_place(&place) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                use std::os::unix::fs::DirBuilderExt;
                match fs::DirBuilder::new().mode(0o755).create(&place) {
                    Ok(()) => {}
                    // (Made meanwhile: checked as found, below.)
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(error) => {
                        return Err(FileError::Write {
                            path: shown.join(&name),
                            error,
                        })
                    }
                }
                open_place(&place).map_err(read)?
            }
            Err(e) => return Err(read(e)),
        };
        let m = f.metadata().map_err(read)?;
        if m.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(refused(
                    dir,
                    format!("leads through more than {MAX_LINKS} symbolic links"),
                ));
            }
            if m.uid() != me && m.uid() != 0 {
                return Err(refused(
                    dir,
                    format!(
                        "is reached through the symbolic link {} owned by uid {}, not by the user running linerate (uid {me}) nor root: give the directory itself",
                        shown.join(&name).display(),
                        m.uid()
                    ),
                ));
            }
            let target = fs::read_link(&place).map_err(read)?;
            if target.is_absolute() {
                at = open_place(Path::new("/")).map_err(read)?;
                shown = PathBuf::from("/");
            }
            todo.extend(names(&target));
            continue;
        }
        if !m.is_dir() {
            return Err(refused(dir, format!("is {}, not a directory", kind(&m))));
        }
        at = f;
        if name == ".." {
            shown.pop();
        } else {
            shown.push(&name);
        }
    }
    let m = at.metadata().map_err(read)?;
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
    read_capped(path, f, &m, cap).map(Some)
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

/// Whom a file read from a path a user gave is trusted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Anyone's (a sweep file, a result to read): its contents are checked.
    Any,
    /// A file that makes linerate act with its user's authority (an
    /// inventory names the hosts tokens are sent to; a token file holds the
    /// secret): only the user running linerate's or root's, and not
    /// writable by its group or others.
    Mine,
}

/// The most symbolic links followed on the way to one file (the kernel's
/// own limit).
const MAX_LINKS: usize = 40;

/// The bytes of the regular file `path`, a path a user gave (a sweep file,
/// an inventory, a token file, a result): at most `cap` bytes (a larger
/// file is refused from its size, before anything is read); a FIFO, a
/// device, a socket or a directory refused. A symbolic link on the way is
/// followed only where root alone owns every component and can write it
/// (the link, every directory looked in, the file itself), as Kubernetes
/// mounts a ConfigMap or a Secret (`inventory.toml -> ..data/inventory.toml`,
/// `..data -> ..2026_x`); any other link is refused. A missing file is an
/// error.
pub fn read_input(path: &Path, cap: u64, trust: Trust) -> Result<Vec<u8>, FileError> {
    read_input_meta(path, cap, trust).map(|(bytes, _)| bytes)
}

/// [`read_input`] as text.
pub fn read_input_text(path: &Path, cap: u64, trust: Trust) -> Result<String, FileError> {
    let bytes = read_input(path, cap, trust)?;
    String::from_utf8(bytes).map_err(|e| FileError::Read {
        path: path.to_path_buf(),
        error: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

/// [`read_input`] with the file's metadata (taken from the file read).
pub fn read_input_meta(
    path: &Path,
    cap: u64,
    trust: Trust,
) -> Result<(Vec<u8>, fs::Metadata), FileError> {
    let at = through_links(path)?;
    let linked = at.is_some();
    let at = at.unwrap_or_else(|| path.to_path_buf());
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&at)
        .map_err(|e| open_error(path, e, false))?;
    let m = check_open(path, &f, false, false)?;
    if linked && !root_alone(&m, &at) {
        return Err(not_root_alone(path, &at, &m));
    }
    if trust == Trust::Mine {
        check_mine(path, &m)?;
    }
    let bytes = read_capped(path, f, &m, cap)?;
    Ok((bytes, m))
}

/// Refuses a file that is neither the user's running linerate nor root's,
/// or that its group or others can write.
fn check_mine(path: &Path, m: &fs::Metadata) -> Result<(), FileError> {
    let me = euid();
    if m.uid() != me && m.uid() != 0 {
        return Err(refused(
            path,
            format!(
                "belongs to uid {}, not to the user running linerate (uid {me}) nor to root: linerate acts on it with your authority (an inventory chooses where tokens are sent, a token file is the secret sent), so another user's is not used; check it, then `chown` it",
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(refused(
            path,
            format!(
                "can be written by its group or by others (mode {:o}): another user could choose what linerate does with your authority; `chmod go-w` it",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Reads the open file `f` (of metadata `m`), at most `cap` bytes: a
/// larger one is refused from its size, without reading it.
fn read_capped(path: &Path, f: File, m: &fs::Metadata, cap: u64) -> Result<Vec<u8>, FileError> {
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
    Ok(bytes)
}

/// Whether only root can change what `m` (at `at`) is: root's, and not
/// writable by its group or others unless it is a sticky directory (where
/// only an entry's owner renames or removes it: the next component,
/// root's, stays) or on a read-only mount (a ConfigMap's volume).
fn root_alone(m: &fs::Metadata, at: &Path) -> bool {
    m.uid() == 0
        && (m.mode() & 0o022 == 0 || (m.is_dir() && m.mode() & 0o1000 != 0) || read_only_mount(at))
}

fn read_only_mount(at: &Path) -> bool {
    nix::sys::statvfs::statvfs(at)
        .is_ok_and(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY))
}

fn not_root_alone(path: &Path, at: &Path, m: &fs::Metadata) -> FileError {
    refused(
        path,
        format!(
            "is reached through a symbolic link, and {} is {} (uid {}, mode {:o}): linerate reads through a link only where root alone owns and writes every component (as Kubernetes mounts a ConfigMap or a Secret); give the file itself",
            at.display(),
            if m.uid() == 0 {
                "writable by others than root"
            } else {
                "not root's"
            },
            m.uid(),
            m.mode() & 0o7777
        ),
    )
}

/// The names of `p` to walk, the first last (a stack); `.` left out.
fn names(p: &Path) -> Vec<std::ffi::OsString> {
    use std::path::Component;
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .rev()
        .collect()
}

/// Where `path` leads when a symbolic link is on the way (None: no link,
/// the path is opened as it is). Walked one component at a time; refused
/// unless root alone owns and writes each link and each directory looked
/// in (the file itself is checked once opened). A link that leads nowhere
/// is refused, not taken for absence.
fn through_links(path: &Path) -> Result<Option<PathBuf>, FileError> {
    let read = |error| FileError::Read {
        path: path.to_path_buf(),
        error,
    };
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(read)?.join(path)
    };
    // Still to walk, the next on top.
    let mut todo = names(&abs);
    let mut at = PathBuf::from("/");
    let mut looked_in: Vec<PathBuf> = Vec::new();
    let mut links: Vec<(PathBuf, fs::Metadata)> = Vec::new();
    while let Some(name) = todo.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        let m = match fs::symlink_metadata(&next) {
            Ok(m) => m,
            // No link so far: the open names what is missing.
            Err(_) if links.is_empty() => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(refused(
                    path,
                    format!(
                        "is a symbolic link that leads to {}, which does not exist: give the file itself",
                        next.display()
                    ),
                ))
            }
            Err(e) => return Err(read(e)),
        };
        if !looked_in.contains(&at) {
            looked_in.push(at.clone());
        }
        if m.file_type().is_symlink() {
            if links.len() == MAX_LINKS {
                return Err(refused(
                    path,
                    format!("leads through more than {MAX_LINKS} symbolic links"),
                ));
            }
            let target = fs::read_link(&next).map_err(read)?;
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            todo.extend(names(&target));
            links.push((next, m));
        } else {
            at = next;
        }
    }
    if links.is_empty() {
        return Ok(None);
    }
    for (link, m) in &links {
        if m.uid() != 0 {
            return Err(not_root_alone(path, link, m));
        }
    }
    for dir in &looked_in {
        let m = fs::metadata(dir).map_err(read)?;
        if !root_alone(&m, dir) {
            return Err(not_root_alone(path, dir, &m));
        }
    }
    Ok(Some(at))
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
    #[ignore = "needs root: another user's file is made by chown"]
    fn only_regular_files_are_read_and_with_a_cap() {
        assert!(nix::unistd::geteuid().is_root(), "only_regular_files_are_read_and_with_a_cap needs root: another user's file is made by chown");
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
    #[ignore = "needs root: another user's file is made by chown"]
    fn output_directories_only_their_owner_can_write() {
        assert!(nix::unistd::geteuid().is_root(), "output_directories_only_their_owner_can_write needs root: another user's file is made by chown");
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

    /// The volume of a ConfigMap as the kubelet writes it: every name a
    /// link into the current timestamped folder.
    fn config_map(d: &Path) -> PathBuf {
        fs::create_dir(d.join("..2026_x")).unwrap();
        fs::write(d.join("..2026_x/inventory.toml"), "version = 1\n").unwrap();
        symlink("..2026_x", d.join("..data")).unwrap();
        symlink("..data/inventory.toml", d.join("inventory.toml")).unwrap();
        d.join("inventory.toml")
    }

    #[test]
    #[ignore = "needs root: links through components root alone owns"]
    fn inputs_follow_links_only_through_roots_components() {
        assert!(nix::unistd::geteuid().is_root(), "inputs_follow_links_only_through_roots_components needs root: links through components root alone owns");
        let d = tmp("configmap");
        let inv = config_map(&d);
        for trust in [Trust::Any, Trust::Mine] {
            assert_eq!(read_input_text(&inv, 100, trust).unwrap(), "version = 1\n");
        }
        // (Outputs never follow it.)
        assert!(open_append(&inv).is_err());
        // A link of another user on the way.
        let uid = |u| Some(nix::unistd::Uid::from_raw(u));
        let lchown = |p: &Path, u| {
            nix::unistd::fchownat(
                None,
                p,
                uid(u),
                None,
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap()
        };
        lchown(&d.join("..data"), 65534);
        let e = read_input(&inv, 100, Trust::Any).unwrap_err().to_string();
        assert!(e.contains("..data is not root's (uid 65534"), "{e}");
        lchown(&d.join("..data"), 0);
        // A folder on the way others can write.
        fs::set_permissions(&d, Permissions::from_mode(0o777)).unwrap();
        let e = read_input(&inv, 100, Trust::Any).unwrap_err().to_string();
        assert!(
            e.contains("is writable by others than root (uid 0, mode 777)"),
            "{e}"
        );
        fs::set_permissions(&d, Permissions::from_mode(0o755)).unwrap();
        // The file at the end another user's.
        let file = d.join("..2026_x/inventory.toml");
        nix::unistd::chown(&file, uid(65534), None).unwrap();
        let e = read_input(&inv, 100, Trust::Any).unwrap_err().to_string();
        assert!(e.contains("inventory.toml is not root's"), "{e}");
        nix::unistd::chown(&file, uid(0), None).unwrap();
        read_input(&inv, 100, Trust::Any).unwrap();
        // A link to nothing, a loop, a device through root's links.
        symlink("..data/none", d.join("gone")).unwrap();
        let e = read_input(&d.join("gone"), 100, Trust::Any)
            .unwrap_err()
            .to_string();
        assert!(e.contains("which does not exist"), "{e}");
        symlink("loop", d.join("loop")).unwrap();
        let e = read_input(&d.join("loop"), 100, Trust::Any)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 40 symbolic links"), "{e}");
        symlink("/dev/zero", d.join("zero")).unwrap();
        let e = read_input(&d.join("zero"), 100, Trust::Any)
            .unwrap_err()
            .to_string();
        assert!(e.contains("zero: is a character device"), "{e}");
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    #[ignore = "needs root: another user's file is made by chown"]
    fn inputs_are_regular_capped_and_trusted_only_when_mine() {
        assert!(nix::unistd::geteuid().is_root(), "inputs_are_regular_capped_and_trusted_only_when_mine needs root: another user's file is made by chown");
        let d = tmp("inputs");
        let fifo = d.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = read_input(&fifo, 100, Trust::Any).unwrap_err().to_string();
        assert!(e.contains("fifo: is a FIFO"), "{e}");
        let e = read_input(Path::new("/dev/zero"), 100, Trust::Any)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero: is a character device"), "{e}");
        // A sparse GiB: refused from its size, nothing read.
        let sparse = d.join("sparse");
        File::create(&sparse).unwrap().set_len(1 << 30).unwrap();
        let e = read_input(&sparse, 4096, Trust::Mine)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("sparse: is larger than the 4096 bytes linerate reads of it"),
            "{e}"
        );
        let mine = d.join("mine");
        fs::write(&mine, "x").unwrap();
        fs::set_permissions(&mine, Permissions::from_mode(0o644)).unwrap();
        assert_eq!(read_input(&mine, 1, Trust::Mine).unwrap(), b"x");
        fs::set_permissions(&mine, Permissions::from_mode(0o664)).unwrap();
        let e = read_input(&mine, 1, Trust::Mine).unwrap_err().to_string();
        assert!(
            e.contains("mine: can be written by its group or by others (mode 664)"),
            "{e}"
        );
        assert!(read_input(&mine, 1, Trust::Any).is_ok());
        fs::set_permissions(&mine, Permissions::from_mode(0o600)).unwrap();
        nix::unistd::chown(&mine, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let e = read_input(&mine, 1, Trust::Mine).unwrap_err().to_string();
        assert!(
            e.contains(
                "mine: belongs to uid 65534, not to the user running linerate (uid 0) nor to root"
            ),
            "{e}"
        );
        assert!(read_input(&mine, 1, Trust::Any).is_ok());
        // A link in a folder another user owns is not followed.
        let theirs = d.join("theirs");
        fs::create_dir(&theirs).unwrap();
        symlink(&mine, theirs.join("link")).unwrap();
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let e = read_input(&theirs.join("link"), 1, Trust::Any)
            .unwrap_err()
            .to_string();
        assert!(e.contains("theirs is not root's (uid 65534"), "{e}");
        let _ = fs::remove_dir_all(d);
    }

    #[test]
    #[ignore = "needs root: another user's file is made by chown"]
    fn output_directories_are_made_beneath_folders_only_their_user_or_root_writes() {
        assert!(nix::unistd::geteuid().is_root(), "output_directories_are_made_beneath_folders_only_their_user_or_root_writes needs root: another user's file is made by chown");
        let d = tmp("made");
        // Made, parents too, beneath a sticky /tmp.
        let out = d.join("a/b/out");
        create_output_dir(&out).unwrap();
        assert!(out.is_dir());
        create_output_dir(&out).unwrap();
        // Beneath a folder another user owns (and so can write).
        let theirs = d.join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::set_permissions(&theirs, Permissions::from_mode(0o755)).unwrap();
        nix::unistd::chown(&theirs, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        let e = create_output_dir(&theirs.join("out"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "out: is beneath {}, which belongs to uid 65534 (mode 755)",
                theirs.display()
            )),
            "{e}"
        );
        assert!(!theirs.join("out").exists(), "made beneath it");
        assert!(check_output_dir(&theirs.join("x")).is_err());
        // Beneath a root folder everyone can write (not sticky): refused;
        // sticky: taken.
        let open = d.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, Permissions::from_mode(0o777)).unwrap();
        let e = create_output_dir(&open.join("out"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("which its group or others can write (mode 777)"),
            "{e}"
        );
        assert!(!open.join("out").exists());
        fs::set_permissions(&open, Permissions::from_mode(0o1777)).unwrap();
        create_output_dir(&open.join("out")).unwrap();
        // Through a link of root's: followed; of another user's: refused.
        symlink(d.join("a"), d.join("to-a")).unwrap();
        create_output_dir(&d.join("to-a/b/c")).unwrap();
        assert!(d.join("a/b/c").is_dir());
        nix::unistd::fchownat(
            None,
            &d.join("to-a"),
            Some(nix::unistd::Uid::from_raw(65534)),
            None,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .unwrap();
        let e = create_output_dir(&d.join("to-a/b/d"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("through the symbolic link"), "{e}");
        assert!(!d.join("a/b/d").exists());
        let _ = fs::remove_dir_all(d);
    }
}
