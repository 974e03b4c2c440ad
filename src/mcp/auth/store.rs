//! Where a server's sign-in lives: one owner-only file per server URL under
//! `<KEEL_HOME>/mcp-auth/` (the client keel registered, the authorization server's metadata,
//! the tokens, and the last challenge the server sent). A file is bound to its URL: the name is
//! a hash of the URL and the URL is kept inside, so a configuration that points a server name
//! at another URL finds no token, and a token is only ever sent to the URL it was issued for.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The folder under `KEEL_HOME` that holds the sign-in files.
pub const DIR: &str = "mcp-auth";

/// The client keel is known as to the authorization server.
#[derive(Clone, Serialize, Deserialize)]
pub struct ClientRecord {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub redirect_uri: String,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[hidden]"))
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

/// Everything kept about one server's sign-in.
#[derive(Default, Serialize, Deserialize)]
pub struct Record {
    pub server_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AuthorizationMetadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The `WWW-Authenticate` value of the server's last 401/403 (the scope it asks for and
    /// where its metadata is), so the next sign-in asks for what the server wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// Seconds since the epoch of the last successful sign-in.
    #[serde(default)]
    pub signed_in_at: u64,
}

impl Record {
    pub fn has_token(&self) -> bool {
        self.credentials.as_ref().is_some_and(|c| c.token_response.is_some())
    }
}

/// The sign-in file of one server URL.
#[derive(Clone, Debug)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
    /// Serialises this process's read-modify-write of the file.
    lock: Arc<std::sync::Mutex<()>>,
}

impl TokenFile {
    pub fn new(keel_home: &Path, url: &str) -> TokenFile {
        let digest = Sha256::digest(url.as_bytes());
        let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        TokenFile {
            path: keel_home.join(DIR).join(format!("{hex}.json")),
            url: url.to_string(),
            lock: Arc::new(std::sync::Mutex::new(())),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record, or an empty one for this URL when there is none. A file that belongs to
    /// another URL (a hash collision, a copied file) counts as none.
    pub fn load(&self) -> Result<Record, String> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.load_unlocked()
    }

    fn load_unlocked(&self) -> Result<Record, String> {
        let empty = Record {
            server_url: self.url.clone(),
            ..Record::default()
        };
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty),
            Err(e) => return Err(format!("cannot read {}: {e}", self.path.display())),
        };
        let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is not a sign-in file keel can read ({e}); remove it and sign in again",
                self.path.display()
            )
        })?;
        Ok(if record.server_url == self.url { record } else { empty })
    }

    /// Changes the record and writes it back atomically, owner-only.
    pub fn update(&self, change: impl FnOnce(&mut Record)) -> Result<(), String> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut record = self.load_unlocked()?;
        change(&mut record);
        record.server_url = self.url.clone();
        let bytes = serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?;
        crate::fsutil::write_private(&self.path, &bytes)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// Forgets the sign-in (the file is removed).
    pub fn remove(&self) -> Result<bool, String> {
        let _held = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot remove {}: {e}", self.path.display())),
        }
    }

    /// Notes the server's challenge (401/403), keeping the tokens.
    pub fn note_challenge(&self, challenge: &str) {
        if let Err(e) = self.update(|r| r.challenge = Some(challenge.to_string())) {
            crate::debug::log(format!("mcp auth: {e}"));
        }
    }
}

fn store_error(e: String) -> AuthError {
    AuthError::CredentialStoreError(e)
}

/// The client library's view of the tokens in a [`TokenFile`].
pub struct FileCredentials(pub TokenFile);

#[async_trait::async_trait]
impl CredentialStore for FileCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.0.load().map_err(store_error)?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.0
            .update(|r| {
                r.credentials = Some(credentials);
                r.challenge = None;
            })
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.update(|r| r.credentials = None).map_err(store_error)
    }

    /// Two keel processes refreshing the same sign-in take turns (a refresh token may be
    /// good for one use only): an exclusive `flock` on a lock file beside the record.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let lock_path = self.0.path.with_extension("lock");
        let guard = tokio::task::spawn_blocking(move || -> Result<CredentialRefreshGuard, String> {
            use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
            if let Some(dir) = lock_path.parent() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(dir)
                    .map_err(|e| e.to_string())?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&lock_path)
                .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
            let locked = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| format!("cannot lock {}: {e}", lock_path.display()))?;
            Ok(CredentialRefreshGuard::new(locked))
        })
        .await
        .map_err(|e| store_error(e.to_string()))?
        .map_err(store_error)?;
        Ok(Some(guard))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn records_are_owner_only_and_bound_to_their_url() {
        let home = tempfile::tempdir().unwrap();
        let file = TokenFile::new(home.path(), "https://mcp.example/mcp");
        file.update(|r| r.challenge = Some("Bearer scope=\"a\"".into()))
            .unwrap();
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(home.path().join(DIR)).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(file.load().unwrap().challenge.as_deref(), Some("Bearer scope=\"a\""));

        // Another URL never sees this record, even when handed the same file.
        let other = TokenFile {
            url: "https://elsewhere.example/mcp".into(),
            ..file.clone()
        };
        assert!(other.load().unwrap().challenge.is_none());
        assert_ne!(
            TokenFile::new(home.path(), "https://elsewhere.example/mcp").path(),
            file.path()
        );
    }

    #[test]
    fn an_existing_file_becomes_owner_only() {
        let home = tempfile::tempdir().unwrap();
        let file = TokenFile::new(home.path(), "https://mcp.example/mcp");
        std::fs::create_dir_all(file.path().parent().unwrap()).unwrap();
        std::fs::write(file.path(), b"{\"server_url\": \"https://mcp.example/mcp\"}").unwrap();
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        file.update(|r| r.signed_in_at = 1).unwrap();
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
