//! Postgres over TLS: `sslmode=require` encrypts (managed databases demand it), and a
//! certificate that cannot be verified is refused with an error, not a panic.

use carcassonne_store::{Backend, Store, StoreError};

use crate::common::{Context, impatient_options, postgres_available, run};

/// The URL of the test's database with `sslmode` set.
fn with_sslmode(url: &str, mode: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}sslmode={mode}")
}

/// How many of the store's sessions on this database Postgres sees encrypted, and how
/// many in all.
async fn store_sessions(context: &Context) -> (i64, i64) {
    let database = context.url.rsplit('/').next().unwrap();
    let database = database.split('?').next().unwrap();
    let sessions = format!(
        "FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
         WHERE a.datname = '{database}' AND a.application_name = 'carcassonne-server'"
    );
    let encrypted = context
        .count(&format!("SELECT COUNT(*) {sessions} AND s.ssl"))
        .await;
    let all = context.count(&format!("SELECT COUNT(*) {sessions}")).await;
    (encrypted, all)
}

#[tokio::test]
async fn sslmode_require_encrypts_every_session() {
    if !postgres_available("tls::sslmode_require_encrypts_every_session") {
        return;
    }
    run(Backend::Postgres, |context| async move {
        // The harness's own store is closed so that only the one under test is counted.
        context.store.close().await;
        let store = Store::connect(&with_sslmode(&context.url, "require"))
            .await
            .unwrap();
        store.ping().await.unwrap();
        let (encrypted, all) = store_sessions(&context).await;
        assert!(
            all >= 1 && encrypted == all,
            "{encrypted} of {all} encrypted"
        );
        store.close().await;

        // The check can fail: without TLS no session is encrypted.
        let plain = Store::connect(&with_sslmode(&context.url, "disable"))
            .await
            .unwrap();
        plain.ping().await.unwrap();
        let (encrypted, all) = store_sessions(&context).await;
        assert!(all >= 1 && encrypted == 0, "{encrypted} of {all} encrypted");
        plain.close().await;
    })
    .await;
}

#[tokio::test]
async fn sslmode_verify_full_refuses_an_untrusted_certificate() {
    if !postgres_available("tls::sslmode_verify_full_refuses_an_untrusted_certificate") {
        return;
    }
    run(Backend::Postgres, |context| async move {
        let url = with_sslmode(&context.url, "verify-full");
        let error = Store::connect_with(&impatient_options(&url))
            .await
            .unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error, StoreError::Unavailable(_) | StoreError::Config(_)),
            "{error:?}"
        );
        assert!(message.to_lowercase().contains("certificate"), "{message}");
    })
    .await;
}
