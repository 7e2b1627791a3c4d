//! Player identities.

use carcassonne_store::StoreError;
use uuid::Uuid;

use crate::common::{Context, player};

backend_tests! {
    async fn a_recovery_code_works_once_before_it_expires_and_replaces_the_secret(context: Context) {
        let store = &context.store;
        let ada = player("Ada");
        store.create_player(&ada).await.unwrap();
        assert!(!store.issue_recovery_code(Uuid::new_v4(), "nobody", 100).await.unwrap());
        assert!(store.issue_recovery_code(ada.id, "first", 100).await.unwrap());
        // A new code replaces the outstanding one.
        assert!(store.issue_recovery_code(ada.id, "second", 100).await.unwrap());
        assert_eq!(store.recover_player("first", 50, "new-secret").await.unwrap(), None);
        // Expired at its deadline.
        assert_eq!(store.recover_player("second", 100, "new-secret").await.unwrap(), None);
        assert_eq!(store.player(ada.id).await.unwrap().unwrap().secret_hash, ada.secret_hash);

        assert!(store.issue_recovery_code(ada.id, "third", 200).await.unwrap());
        let moved = store.recover_player("third", 150, "new-secret").await.unwrap().unwrap();
        assert_eq!((moved.id, moved.secret_hash.as_str()), (ada.id, "new-secret"));
        assert_eq!(store.player(ada.id).await.unwrap(), Some(moved));
        assert_eq!(store.recover_player("third", 150, "again").await.unwrap(), None, "used up");
    }

    async fn players_round_trip(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        assert_eq!(context.store.player(ada.id).await.unwrap(), Some(ada));
        assert_eq!(context.store.player(Uuid::new_v4()).await.unwrap(), None);
    }

    async fn a_player_id_is_written_once(context: Context) {
        let ada = player("Ada");
        context.store.create_player(&ada).await.unwrap();
        let impostor = carcassonne_store::PlayerRow {
            display_name: "Not Ada".to_owned(),
            ..ada.clone()
        };
        let error = context.store.create_player(&impostor).await.unwrap_err();
        assert!(matches!(error, StoreError::Conflict(_)), "{error:?}");
        assert_eq!(context.store.player(ada.id).await.unwrap(), Some(ada));
    }
}
