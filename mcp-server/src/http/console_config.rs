//! The operator console's settings (`console/`): who may use it (Basic users or OAuth
//! scopes, each a viewer or an operator) and how many event streams may be open.
//! [`HttpConfig::console`](super::HttpConfig::console) holds them.

/// The console's settings: who may use it, and how many of its event streams
/// (`GET /console/api/events`) may be open at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// Who may use the console.
    pub access: ConsoleAccess,
    /// Event streams one operator (one Basic user, one OAuth principal) may hold open on
    /// this server at once: one more is refused with 429 until one of them closes. Each
    /// open console page holds one. 0 refuses every stream. Default
    /// [`DEFAULT_MAX_STREAMS_PER_OPERATOR`](ConsoleConfig::DEFAULT_MAX_STREAMS_PER_OPERATOR).
    pub max_streams_per_operator: usize,
    /// Event streams all operators together may hold open on this server at once: one
    /// more is refused with 429 until one of them closes. 0 refuses every stream. Default
    /// [`DEFAULT_MAX_STREAMS`](ConsoleConfig::DEFAULT_MAX_STREAMS).
    pub max_streams: usize,
}

/// What a console user may do.
///
/// Every `GET` of the console (the page, the task list, a task in full, the counts, the
/// charts, the event stream) is open to both roles; every state-changing request (every
/// `POST`: cancel, bulk cancel, re-run, and any route added later) needs
/// [`ConsoleRole::Operator`]. The access layer decides it by the method, so a new route
/// is covered without a line of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConsoleRole {
    /// Reads only: a state-changing request is refused with 403.
    Viewer,
    /// Reads, and may cancel and re-run tasks.
    Operator,
}

impl ConsoleRole {
    /// Both roles, the weaker first.
    pub const ALL: [ConsoleRole; 2] = [ConsoleRole::Viewer, ConsoleRole::Operator];

    /// The role's name: `viewer` or `operator` (in credentials and in `GET /console/api/me`).
    pub fn as_str(self) -> &'static str {
        match self {
            ConsoleRole::Viewer => "viewer",
            ConsoleRole::Operator => "operator",
        }
    }

    /// Whether the role may send state-changing requests (`POST`).
    pub fn may_change_state(self) -> bool {
        self == ConsoleRole::Operator
    }
}

impl std::fmt::Display for ConsoleRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ConsoleRole {
    type Err = ConsoleConfigError;

    /// `viewer` or `operator`, exactly; anything else is [`ConsoleConfigError::UnknownRole`].
    fn from_str(name: &str) -> Result<ConsoleRole, ConsoleConfigError> {
        ConsoleRole::ALL
            .into_iter()
            .find(|r| r.as_str() == name)
            .ok_or_else(|| ConsoleConfigError::UnknownRole(name.to_owned()))
    }
}

/// One HTTP Basic user of the console.
#[derive(Clone, PartialEq, Eq)]
pub struct ConsoleUser {
    /// The user name (never holds `:`); the operator named in the audit trail.
    pub user: String,
    /// The password.
    pub password: String,
    /// What the user may do.
    pub role: ConsoleRole,
}

impl std::fmt::Debug for ConsoleUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("ConsoleUser")
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("role", &self.role)
            .finish()
    }
}

/// Who may use the console, and in which [`ConsoleRole`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsoleAccess {
    /// HTTP Basic authentication (RFC 7617) with these users (at least one, each name
    /// once), read from the `Authorization` header only and compared in constant time.
    /// The operator named in the audit trail is the user name. Basic credentials travel
    /// in clear text: only behind TLS or on a loopback address.
    Basic(Vec<ConsoleUser>),
    /// The server's authenticator ([`HttpConfig::principal`](crate::http::HttpConfig::principal), OAuth) must accept the
    /// caller's bearer token; a token holding `operator` gives [`ConsoleRole::Operator`],
    /// one holding `viewer` (when set) and not `operator` gives [`ConsoleRole::Viewer`],
    /// any other is refused with 403 `insufficient_scope`. The operator named in the audit
    /// trail is the token's principal. Without an authenticator nobody gets in.
    Scope {
        /// The scope of operators, e.g. [`ConsoleConfig::WRITE_SCOPE`].
        operator: String,
        /// The scope of viewers, e.g. [`ConsoleConfig::READ_SCOPE`]; `None`: no viewers.
        viewer: Option<String>,
    },
}

/// Why console settings were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsoleConfigError {
    /// `USER:PASSWORD` without the colon.
    #[error("expected USER:PASSWORD (or ROLE=USER:PASSWORD)")]
    NoColon,
    /// An empty user name.
    #[error("the console user name is empty")]
    EmptyUser,
    /// A user name holding `:`, which Basic authentication cannot carry (RFC 7617).
    #[error("the console user name holds a colon")]
    UserWithColon,
    /// An empty password.
    #[error("the console password is empty")]
    EmptyPassword,
    /// A role that is neither `viewer` nor `operator`.
    #[error("unknown console role {0:?}: expected viewer or operator")]
    UnknownRole(String),
    /// The same user name given twice.
    #[error("the console user {0:?} is given twice")]
    DuplicateUser(String),
    /// A Basic user added to settings that use OAuth scopes.
    #[error("the console uses OAuth scopes: a Basic user cannot be added")]
    NotBasic,
    /// Credentials text without a single credential.
    #[error("no console credentials (expected USER:PASSWORD or ROLE=USER:PASSWORD lines)")]
    NoCredentials,
    /// A line of credentials text was refused (its number from 1; never its content).
    #[error("line {line}: {error}")]
    OnLine {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        error: Box<ConsoleConfigError>,
    },
    /// An empty scope, or one with a space or another character a scope cannot hold.
    #[error("not an OAuth scope: {0:?}")]
    BadScope(String),
    /// The same scope for viewers and operators.
    #[error("the console's viewer and operator scopes are the same: {0:?}")]
    SameScopes(String),
}

impl ConsoleConfig {
    /// The default of [`max_streams_per_operator`](ConsoleConfig::max_streams_per_operator): 4.
    pub const DEFAULT_MAX_STREAMS_PER_OPERATOR: usize = 4;

    /// The default of [`max_streams`](ConsoleConfig::max_streams): 32.
    pub const DEFAULT_MAX_STREAMS: usize = 32;

    /// The conventional OAuth scope of viewers: `console:read`.
    pub const READ_SCOPE: &str = "console:read";

    /// The conventional OAuth scope of operators: `console:write`.
    pub const WRITE_SCOPE: &str = "console:write";

    /// `access` with the default stream limits.
    fn with_access(access: ConsoleAccess) -> ConsoleConfig {
        ConsoleConfig {
            access,
            max_streams_per_operator: ConsoleConfig::DEFAULT_MAX_STREAMS_PER_OPERATOR,
            max_streams: ConsoleConfig::DEFAULT_MAX_STREAMS,
        }
    }

    /// Basic authentication with one user, `user` and `password`, both non-empty, as an
    /// [operator](ConsoleRole::Operator) (a colon in the user name is refused as an empty
    /// password would be: it could never log in). Add more users with
    /// [`with_user`](ConsoleConfig::with_user).
    pub fn basic(
        user: impl Into<String>,
        password: impl Into<String>,
    ) -> Result<ConsoleConfig, ConsoleConfigError> {
        let user = ConsoleConfig::user(user.into(), password.into(), ConsoleRole::Operator)?;
        Ok(ConsoleConfig::with_access(ConsoleAccess::Basic(vec![user])))
    }

    /// These settings with one more Basic user, e.g. a viewer:
    ///
    /// ```
    /// use mcp_tasks_server::console::{ConsoleConfig, ConsoleRole};
    /// let config = ConsoleConfig::basic("admin", "change-me")?
    ///     .with_user("support", "read-only-password", ConsoleRole::Viewer)?;
    /// # Ok::<(), mcp_tasks_server::console::ConsoleConfigError>(())
    /// ```
    ///
    /// Refused: a name already there ([`ConsoleConfigError::DuplicateUser`]), settings of
    /// OAuth scopes ([`ConsoleConfigError::NotBasic`]), and what [`basic`](ConsoleConfig::basic) refuses.
    pub fn with_user(
        mut self,
        user: impl Into<String>,
        password: impl Into<String>,
        role: ConsoleRole,
    ) -> Result<ConsoleConfig, ConsoleConfigError> {
        let user = ConsoleConfig::user(user.into(), password.into(), role)?;
        let ConsoleAccess::Basic(users) = &mut self.access else {
            return Err(ConsoleConfigError::NotBasic);
        };
        if users.iter().any(|u| u.user == user.user) {
            return Err(ConsoleConfigError::DuplicateUser(user.user));
        }
        users.push(user);
        Ok(self)
    }

    /// A checked Basic user.
    fn user(
        user: String,
        password: String,
        role: ConsoleRole,
    ) -> Result<ConsoleUser, ConsoleConfigError> {
        if user.is_empty() {
            return Err(ConsoleConfigError::EmptyUser);
        }
        if user.contains(':') {
            return Err(ConsoleConfigError::UserWithColon);
        }
        if password.is_empty() {
            return Err(ConsoleConfigError::EmptyPassword);
        }
        Ok(ConsoleUser {
            user,
            password,
            role,
        })
    }

    /// One Basic user from `[ROLE=]USER:PASSWORD`, split at the first colon (the password
    /// may hold more colons); before it, an optional role and `=` (`viewer=support:pw`,
    /// `operator=admin:pw`; without one the user is an operator, and a user name holding
    /// `=` must then be written with its role: `operator=a=b:pw`).
    fn parse_user(entry: &str) -> Result<ConsoleUser, ConsoleConfigError> {
        let (head, password) = entry.split_once(':').ok_or(ConsoleConfigError::NoColon)?;
        let (role, user) = match head.split_once('=') {
            Some((role, user)) => (role.parse()?, user),
            None => (ConsoleRole::Operator, head),
        };
        ConsoleConfig::user(user.to_owned(), password.to_owned(), role)
    }

    /// Basic authentication with one user from `[ROLE=]USER:PASSWORD` (split at the first
    /// colon; the password may hold more; the role, `viewer` or `operator`, defaults to
    /// `operator`), as a command line gives it.
    pub fn parse_basic(pair: &str) -> Result<ConsoleConfig, ConsoleConfigError> {
        let user = ConsoleConfig::parse_user(pair)?;
        Ok(ConsoleConfig::with_access(ConsoleAccess::Basic(vec![user])))
    }

    /// Basic authentication from the text of a credentials file: its first line that is
    /// not blank, `[ROLE=]USER:PASSWORD`, with the whitespace around it trimmed, read as
    /// [`parse_basic`](ConsoleConfig::parse_basic) reads it. What follows that line is
    /// ignored; [`parse_basic_list`](ConsoleConfig::parse_basic_list) reads every line.
    pub fn parse_basic_file(text: &str) -> Result<ConsoleConfig, ConsoleConfigError> {
        let line = text.trim_start().lines().next().unwrap_or("");
        ConsoleConfig::parse_basic(line.trim())
    }

    /// Basic authentication with every user of `text`: one `[ROLE=]USER:PASSWORD` per
    /// line (read as [`parse_basic`](ConsoleConfig::parse_basic) reads it), the
    /// whitespace around each trimmed; blank lines and lines starting with `#` are
    /// skipped. At least one user, each name once. An error names the line's number,
    /// never its content.
    ///
    /// ```text
    /// # who may use the console
    /// admin:change-me
    /// viewer=support:another-password
    /// ```
    pub fn parse_basic_list(text: &str) -> Result<ConsoleConfig, ConsoleConfigError> {
        let mut config: Option<ConsoleConfig> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let on_line = |error| ConsoleConfigError::OnLine {
                line: n + 1,
                error: Box::new(error),
            };
            let user = ConsoleConfig::parse_user(line).map_err(on_line)?;
            config = Some(match config {
                None => ConsoleConfig::with_access(ConsoleAccess::Basic(vec![user])),
                Some(c) => c
                    .with_user(user.user, user.password, user.role)
                    .map_err(on_line)?,
            });
        }
        config.ok_or(ConsoleConfigError::NoCredentials)
    }

    /// OAuth: callers whose token the server's authenticator accepts and that hold
    /// `scope` (RFC 6749 scope-token characters, no space), all as
    /// [operators](ConsoleRole::Operator); no viewers. For viewers too, see
    /// [`scopes`](ConsoleConfig::scopes).
    pub fn scope(scope: impl Into<String>) -> Result<ConsoleConfig, ConsoleConfigError> {
        let operator = ConsoleConfig::checked_scope(scope.into())?;
        Ok(ConsoleConfig::with_access(ConsoleAccess::Scope {
            operator,
            viewer: None,
        }))
    }

    /// OAuth with both roles: a token holding `operator` gives an operator, one holding
    /// `viewer` (and not `operator`) a viewer. The conventional pair is
    /// `ConsoleConfig::scopes(ConsoleConfig::READ_SCOPE, ConsoleConfig::WRITE_SCOPE)`
    /// (`console:read`, `console:write`).
    pub fn scopes(
        viewer: impl Into<String>,
        operator: impl Into<String>,
    ) -> Result<ConsoleConfig, ConsoleConfigError> {
        let viewer = ConsoleConfig::checked_scope(viewer.into())?;
        let operator = ConsoleConfig::checked_scope(operator.into())?;
        if viewer == operator {
            return Err(ConsoleConfigError::SameScopes(viewer));
        }
        Ok(ConsoleConfig::with_access(ConsoleAccess::Scope {
            operator,
            viewer: Some(viewer),
        }))
    }

    /// `scope` when it is an OAuth scope token.
    fn checked_scope(scope: String) -> Result<String, ConsoleConfigError> {
        let valid = !scope.is_empty()
            && scope
                .bytes()
                .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b));
        if valid {
            Ok(scope)
        } else {
            Err(ConsoleConfigError::BadScope(scope))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::HttpConfig;

    fn operator(user: &str, password: &str) -> ConsoleUser {
        ConsoleUser {
            user: user.into(),
            password: password.into(),
            role: ConsoleRole::Operator,
        }
    }

    #[test]
    fn debug_never_shows_the_password() {
        let config = ConsoleConfig::basic("admin", "hunter2").expect("valid");
        let shown = format!("{config:?}");
        assert!(
            shown.contains("admin") && !shown.contains("hunter2"),
            "{shown}"
        );
        let http = HttpConfig {
            console: Some(config),
            ..HttpConfig::default()
        };
        assert!(!format!("{http:?}").contains("hunter2"));
    }

    #[test]
    fn credentials_and_scopes_are_checked_when_made() {
        assert_eq!(
            ConsoleConfig::parse_basic("admin:pa:ss").map(|c| c.access),
            Ok(ConsoleAccess::Basic(vec![operator("admin", "pa:ss")]))
        );
        assert_eq!(
            ConsoleConfig::parse_basic("admin"),
            Err(ConsoleConfigError::NoColon)
        );
        assert_eq!(
            ConsoleConfig::parse_basic(":pw"),
            Err(ConsoleConfigError::EmptyUser)
        );
        assert_eq!(
            ConsoleConfig::parse_basic("admin:"),
            Err(ConsoleConfigError::EmptyPassword)
        );
        assert_eq!(
            ConsoleConfig::basic("a:b", "c"),
            Err(ConsoleConfigError::UserWithColon)
        );
        let scope = ConsoleConfig::scope("console:admin").expect("a scope");
        assert_eq!(
            (scope.max_streams_per_operator, scope.max_streams),
            (4, 32),
            "the documented defaults"
        );
        for bad in ["", "two words", "quote\"", "back\\slash"] {
            assert!(ConsoleConfig::scope(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_credentials_file_is_its_first_line_trimmed() {
        let access = |text: &str| ConsoleConfig::parse_basic_file(text).map(|c| c.access);
        let admin = Ok(ConsoleAccess::Basic(vec![operator("admin", "pa:ss word")]));
        for text in [
            "admin:pa:ss word",
            "admin:pa:ss word\n",
            "  admin:pa:ss word \r\n",
            "\n\n admin:pa:ss word\nsecond line:ignored\n",
        ] {
            assert_eq!(access(text), admin, "{text:?}");
        }
        assert_eq!(access(""), Err(ConsoleConfigError::NoColon));
        assert_eq!(access(" \n "), Err(ConsoleConfigError::NoColon));
        assert_eq!(access("admin:\n"), Err(ConsoleConfigError::EmptyPassword));
    }

    #[test]
    fn roles_are_named_in_credentials() {
        let user = |role: ConsoleRole, name: &str, password: &str| ConsoleUser {
            role,
            ..operator(name, password)
        };
        let access = |entry: &str| ConsoleConfig::parse_basic(entry).map(|c| c.access);
        assert_eq!(
            access("viewer=support:pa:ss"),
            Ok(ConsoleAccess::Basic(vec![user(
                ConsoleRole::Viewer,
                "support",
                "pa:ss"
            )]))
        );
        assert_eq!(
            access("operator=a=b:pw=x"),
            Ok(ConsoleAccess::Basic(vec![operator("a=b", "pw=x")]))
        );
        assert_eq!(
            access("admin=bob:pw"),
            Err(ConsoleConfigError::UnknownRole("admin".into()))
        );
        assert_eq!(
            access("Viewer=bob:pw"),
            Err(ConsoleConfigError::UnknownRole("Viewer".into()))
        );
        assert_eq!(access("viewer=:pw"), Err(ConsoleConfigError::EmptyUser));
        let added = ConsoleConfig::basic("admin", "pw")
            .and_then(|c| c.with_user("support", "pw2", ConsoleRole::Viewer))
            .map(|c| c.access);
        assert_eq!(
            added,
            Ok(ConsoleAccess::Basic(vec![
                operator("admin", "pw"),
                user(ConsoleRole::Viewer, "support", "pw2")
            ]))
        );
        assert_eq!(
            ConsoleConfig::basic("admin", "pw").and_then(|c| c.with_user(
                "admin",
                "other",
                ConsoleRole::Viewer
            )),
            Err(ConsoleConfigError::DuplicateUser("admin".into()))
        );
        assert_eq!(
            ConsoleConfig::scope("console").and_then(|c| c.with_user(
                "a",
                "b",
                ConsoleRole::Viewer
            )),
            Err(ConsoleConfigError::NotBasic)
        );
        assert!(ConsoleRole::Viewer < ConsoleRole::Operator);
        assert!(!ConsoleRole::Viewer.may_change_state());
        assert_eq!("operator".parse(), Ok(ConsoleRole::Operator));
    }

    #[test]
    fn a_credentials_list_is_every_line() {
        let text = "# the console\n\n  admin:pa:ss word \nviewer=support:pw\r\n";
        assert_eq!(
            ConsoleConfig::parse_basic_list(text).map(|c| c.access),
            Ok(ConsoleAccess::Basic(vec![
                operator("admin", "pa:ss word"),
                ConsoleUser {
                    role: ConsoleRole::Viewer,
                    ..operator("support", "pw")
                },
            ]))
        );
        let refused = |text: &str| ConsoleConfig::parse_basic_list(text).err();
        assert_eq!(
            refused(" \n# only a comment\n"),
            Some(ConsoleConfigError::NoCredentials)
        );
        let on_line = |line, error| ConsoleConfigError::OnLine {
            line,
            error: Box::new(error),
        };
        assert_eq!(
            refused("admin:pw\n\nsecret-without-colon\n"),
            Some(on_line(3, ConsoleConfigError::NoColon))
        );
        assert_eq!(
            refused("admin:pw\nadmin:other"),
            Some(on_line(
                2,
                ConsoleConfigError::DuplicateUser("admin".into())
            ))
        );
        let said = refused("root=admin:secret-pw").map(|e| e.to_string());
        assert_eq!(
            said.as_deref(),
            Some("line 1: unknown console role \"root\": expected viewer or operator")
        );
    }

    #[test]
    fn scopes_give_roles() {
        assert_eq!(
            ConsoleConfig::scope("console").map(|c| c.access),
            Ok(ConsoleAccess::Scope {
                operator: "console".into(),
                viewer: None
            })
        );
        assert_eq!(
            ConsoleConfig::scopes(ConsoleConfig::READ_SCOPE, ConsoleConfig::WRITE_SCOPE)
                .map(|c| c.access),
            Ok(ConsoleAccess::Scope {
                operator: "console:write".into(),
                viewer: Some("console:read".into())
            })
        );
        assert_eq!(
            ConsoleConfig::scopes("x", "x"),
            Err(ConsoleConfigError::SameScopes("x".into()))
        );
        assert!(ConsoleConfig::scopes("two words", "x").is_err());
    }
}
