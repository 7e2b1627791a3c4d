//! `replay_many` with mimalloc, the allocator the server binary (and so
//! `carcassonne-server replay`) runs the engine under.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "replay_many.rs"]
mod replay_many;

fn main() -> std::process::ExitCode {
    replay_many::main()
}
