//! etcd's authentication: its state, users and roles, as calls of [`EtcdClient`].

use super::EtcdClient;
use crate::etcd::{AuthView, Cause, EtcdError, Grant, ROOT};

/// etcd's authentication: its state, users and roles. Each call is one change, safe to repeat.
impl EtcdClient {
    fn auth_error(&self, what: String) -> impl Fn(Cause) -> EtcdError + '_ {
        move |source| EtcdError::Auth {
            endpoint: self.endpoint.clone(),
            what: what.clone(),
            source,
        }
    }

    /// Whether etcd's authentication is on, and whether its user `root` and the cluster's own
    /// user `engine` exist with the role `root`. On: an authentication of `root` without a password is refused as failed, never
    /// with "authentication is not enabled" (3.4 has no AuthStatus call; root has no password
    /// from 3.5 on, an unknown random one before).
    pub async fn auth_view(&mut self, engine: &str) -> Result<AuthView, EtcdError> {
        let mut auth = self.client.auth_client();
        let enabled = match Self::call(
            self.rpc_timeout,
            auth.authenticate(ROOT.to_string(), String::new()),
        )
        .await
        {
            Ok(_) => true,
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("authentication is not enabled") =>
            {
                false
            }
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("authentication failed") =>
            {
                true
            }
            Err(source) => {
                return Err(self.auth_error("ask whether authentication is on".into())(
                    source,
                ));
            }
        };
        let root = self.user_roles(ROOT).await?;
        let own = self.user_roles(engine).await?;
        let has_root =
            |r: &Option<Vec<String>>| r.as_ref().is_some_and(|r| r.iter().any(|r| r == ROOT));
        Ok(AuthView {
            enabled,
            root_user: root.is_some(),
            root_role: has_root(&root),
            engine_user: own.is_some(),
            engine_role: has_root(&own),
        })
    }

    /// The roles of etcd user `name`, or `None` when there is no such user.
    async fn user_roles(&mut self, name: &str) -> Result<Option<Vec<String>>, EtcdError> {
        let mut auth = self.client.auth_client();
        match Self::call(self.rpc_timeout, auth.user_get(name)).await {
            Ok(r) => Ok(Some(r.roles().to_vec())),
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("user name not found") =>
            {
                Ok(None)
            }
            Err(source) => Err(self.auth_error(format!("read etcd user {name}"))(source)),
        }
    }

    /// Adds the user `name` (none there yet) without a password: it authenticates by the CN of
    /// its client certificate alone. 3.4 knows no passwordless user and ignores the option: it
    /// gets a random password nobody is told.
    pub async fn add_user(&mut self, name: &str) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        let opts = etcd_client::UserAddOptions::new().with_no_pwd();
        match Self::call(
            self.rpc_timeout,
            auth.user_add(name, random_password(), Some(opts)),
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("user name already exists") =>
            {
                Ok(())
            }
            Err(source) => Err(self.auth_error(format!("add etcd user {name}"))(source)),
        }
    }

    /// Grants the role `role` to the user `user` (granted already: nothing changes).
    pub async fn grant_role(&mut self, user: &str, role: &str) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        Self::call(self.rpc_timeout, auth.user_grant_role(user, role))
            .await
            .map(|_| ())
            .map_err(self.auth_error(format!("grant etcd role {role} to user {user}")))
    }

    /// Turns etcd's authentication on (on already: nothing changes).
    pub async fn enable_auth(&mut self) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        Self::call(self.rpc_timeout, auth.auth_enable())
            .await
            .map(|_| ())
            .map_err(self.auth_error("enable authentication".into()))
    }

    /// The permissions of role `name`, or `None` when there is no such role.
    pub async fn role(&mut self, name: &str) -> Result<Option<Vec<Grant>>, EtcdError> {
        let mut auth = self.client.auth_client();
        match Self::call(self.rpc_timeout, auth.role_get(name)).await {
            Ok(r) => Ok(Some(
                r.permissions()
                    .iter()
                    .map(|p| Grant {
                        key: p.key().to_vec(),
                        range_end: p.range_end().to_vec(),
                        write: p.get_type() != etcd_client::PermissionType::Read as i32,
                    })
                    .collect(),
            )),
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("role name not found") =>
            {
                Ok(None)
            }
            Err(source) => Err(self.auth_error(format!("read etcd role {name}"))(source)),
        }
    }

    /// Adds the role `name` without permissions (there already: nothing changes).
    pub async fn add_role(&mut self, name: &str) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        match Self::call(self.rpc_timeout, auth.role_add(name)).await {
            Ok(_) => Ok(()),
            Err(Cause::Etcd(etcd_client::Error::GRpcStatus(s)))
                if s.message().contains("role name already exists") =>
            {
                Ok(())
            }
            Err(source) => Err(self.auth_error(format!("add etcd role {name}"))(source)),
        }
    }

    /// Gives role `name` the permission `g` (read, or read and write, on its range).
    pub async fn grant_permission(&mut self, name: &str, g: &Grant) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        let kind = if g.write {
            etcd_client::PermissionType::Readwrite
        } else {
            etcd_client::PermissionType::Read
        };
        let p =
            etcd_client::Permission::new(kind, g.key.clone()).with_range_end(g.range_end.clone());
        Self::call(self.rpc_timeout, auth.role_grant_permission(name, p))
            .await
            .map(|_| ())
            .map_err(self.auth_error(format!("grant a permission to etcd role {name}")))
    }

    /// Takes the permission on `g`'s range from role `name`.
    pub async fn revoke_permission(&mut self, name: &str, g: &Grant) -> Result<(), EtcdError> {
        let mut auth = self.client.auth_client();
        let opts =
            etcd_client::RoleRevokePermissionOptions::new().with_range_end(g.range_end.clone());
        Self::call(
            self.rpc_timeout,
            auth.role_revoke_permission(name, g.key.clone(), Some(opts)),
        )
        .await
        .map(|_| ())
        .map_err(self.auth_error(format!("revoke a permission of etcd role {name}")))
    }
}

/// 32 random bytes, hex: the password of a user that authenticates by certificate on 3.4.
fn random_password() -> String {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 32];
    // The system's generator does not fail on the platforms this runs on; a zero password
    // would still be unknown to clients, who never get one.
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}
