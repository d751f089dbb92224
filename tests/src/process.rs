//! What a running process holds, read from `/proc`: resident memory and open descriptors.
//! Used by the end-to-end tests and benchmarks that check the daemon stays bounded.

/// Resident set size of `pid` in KiB (`VmRSS`), or `None` when it cannot be read.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
}

/// Open file descriptors of `pid`, or `None` when they cannot be listed.
pub fn open_fds(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The soft open-file limit of `pid` (`Max open files`), or `None` when it cannot be read.
pub fn open_file_limit(pid: u32) -> Option<u64> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse().ok())
}
