//! Running the system's network tools (ip, ethtool) with clear errors.

use std::{
    borrow::Cow,
    process::{Command, Output},
};

use anyhow::{bail, Context, Result};

/// `arg` as one argument of a shell command line: quoted when it holds
/// anything a shell reads (`;`, spaces, `$`, quotes, ...), as it is
/// otherwise. (No argument holds a NUL: one would be left out.)
pub fn quote(arg: &str) -> Cow<'_, str> {
    match shlex::try_quote(arg) {
        Ok(q) => q,
        Err(_) => Cow::Owned(
            shlex::try_quote(&arg.replace('\0', ""))
                .map_or_else(|_| String::from("''"), Cow::into_owned),
        ),
    }
}

/// A command for a person to paste into a shell: its words quoted, one
/// argument each, whatever a name or path holds.
pub fn shown<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs `prog args...`; fails with its stderr when it exits non-zero.
pub fn run(prog: &str, args: &[&str]) -> Result<String> {
    let out = output(prog, args)?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed: {}",
            quote(prog),
            shown(args),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `prog args...` and returns its output whatever its status.
pub fn output(prog: &str, args: &[&str]) -> Result<Output> {
    Command::new(prog).args(args).output().with_context(|| {
        format!("running `{prog}` failed: is it installed? (scripts/install-deps installs it)")
    })
}

/// `ip [-n NS] args...`; a namespace that is not a name is refused.
pub fn ip(netns: Option<&str>, args: &[&str]) -> Result<String> {
    let mut full: Vec<&str> = Vec::new();
    if let Some(ns) = netns {
        linerate_datapath::names::check_netns(ns)?;
        full.extend(["-n", ns]);
    }
    full.extend_from_slice(args);
    run("ip", &full)
}

/// Runs a command inside a network namespace (with its own /sys).
pub fn in_netns(netns: Option<&str>, prog: &str, args: &[&str]) -> Result<String> {
    match netns {
        Some(ns) => {
            linerate_datapath::names::check_netns(ns)?;
            let mut full = vec!["netns", "exec", ns, prog];
            full.extend_from_slice(args);
            run("ip", &full)
        }
        None => run(prog, args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_commands_keep_each_argument_whole() {
        assert_eq!(
            shown(&["ethtool", "-K", "q;id>p;#", "gro", "on"]),
            "ethtool -K 'q;id>p;#' gro on"
        );
        assert_eq!(
            shown(&["ip", "link", "set", "dev", "veth0", "up"]),
            "ip link set dev veth0 up"
        );
        for hostile in ["a b", "$(id)", "x'y", "`id`", "a\"b", "-", "", "a\nb"] {
            let q = quote(hostile);
            assert_eq!(
                shlex::split(&q),
                Some(vec![hostile.to_string()]),
                "{hostile:?} as {q}"
            );
        }
        assert_eq!(quote("a\0b"), "ab");
    }
}
