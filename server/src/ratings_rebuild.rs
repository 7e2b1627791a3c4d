//! `carcassonne-server ratings rebuild`: recompute every rating from the match history.
//!
//! Ratings are a function of the rated matches taken in the order they were rated; this
//! replays them through the rating method and rewrites the ratings and each match's
//! rating changes. On an intact database it changes nothing, which the tests check; after
//! a change of method, or a repaired history, it is how ratings are brought in line. It
//! holds the rating ledger for its one transaction: a rated game that ends meanwhile
//! waits for it (see docs/operations.md).

use carcassonne_store::{RatingsRebuilt, Store, StoreError, StoreOptions};

/// Rebuilds the ratings of the database at `url` (migrating it first, as `serve` does).
pub async fn run(url: &str) -> Result<RatingsRebuilt, StoreError> {
    let store = Store::connect_with(&StoreOptions::new(url.to_owned())).await?;
    let rebuilt = store.rebuild_ratings().await;
    store.close().await;
    rebuilt
}
