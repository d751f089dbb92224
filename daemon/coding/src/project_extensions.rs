//! The parts of a trusted project's `.rein/config.toml` that extend its sessions: command
//! hooks (`[hooks]`) and MCP servers (`[mcp_servers.NAME]`). Other keys of the file are not
//! read here.

use std::collections::BTreeMap;
use std::path::Path;

use rein_protocol::mcp::McpServerConfig;
use serde::Deserialize;

use crate::command_hooks::HooksConfig;
use crate::project::PROJECT_CONFIG_FILE;

/// A project's hooks and MCP servers.
#[derive(Debug, Default, Deserialize)]
pub struct ProjectExtensions {
    /// `[hooks]`, in the format of `config.toml`.
    #[serde(default)]
    pub hooks: HooksConfig,
    /// `[mcp_servers.NAME]`, in the format of `config.toml`.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
}

/// Reads the project's `.rein/config.toml` under `cwd`; a missing file extends nothing. The
/// error names the file. The caller checks trust first.
pub fn read_project_extensions(cwd: &Path) -> Result<ProjectExtensions, String> {
    let path = cwd.join(PROJECT_CONFIG_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).map_err(|error| format!("{}: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(ProjectExtensions::default())
        }
        Err(error) => Err(format!("{}: {error}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_and_servers_are_read_and_other_keys_ignored() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_project_extensions(dir.path()).unwrap().mcp_servers.is_empty());
        std::fs::create_dir_all(dir.path().join(".rein")).unwrap();
        std::fs::write(
            dir.path().join(PROJECT_CONFIG_FILE),
            "model = \"x/y\"\n[mcp_servers.fs]\ncommand = \"fs-server\"\n\
             [[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"true\"\n",
        )
        .unwrap();
        let read = read_project_extensions(dir.path()).unwrap();
        assert_eq!(read.mcp_servers["fs"].command.as_deref(), Some("fs-server"));
        assert!(!read.hooks.is_empty());
        std::fs::write(dir.path().join(PROJECT_CONFIG_FILE), "[mcp_servers.fs]\nargs = 3\n")
            .unwrap();
        assert!(read_project_extensions(dir.path()).unwrap_err().contains("config.toml"));
    }
}
