//! Player identities.

use carcassonne_store::StoreError;
use uuid::Uuid;

use crate::common::{Context, player};

backend_tests! {
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
