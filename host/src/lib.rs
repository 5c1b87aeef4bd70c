//! What linerate knows of the host it runs on, and how it touches it: the
//! interfaces (`iface`, their own counters), the cores (`cores`, `cpu`:
//! /proc/stat), this process's threads as the kernel accounts them
//! (`threads`: /proc/self/task), NAPI (`napi`), sysfs and procfs files (`sysfs`), the files
//! it reads and writes as root (`files`), the host locks of labs and
//! interfaces (`locks`), a fleet's inventory (`inventory`), what a run
//! changes in the kernel written down first (`journal`) and put back
//! (`putback`), the bounds options are checked against (`limits`), and text
//! from outside shown escaped (`shown`, `sh`) or written whole to stdout
//! (`output`). No command-line parsing: the binary hands each function the
//! narrow input it needs.

pub mod cores;
pub mod cpu;
pub mod environment;
pub mod files;
pub mod iface;
pub mod inventory;
pub mod journal;
pub mod limits;
pub mod locks;
pub mod mac;
pub mod napi;
pub mod output;
pub mod privilege;
pub mod putback;
pub mod sh;
pub mod shown;
pub mod sysfs;
pub mod threads;
