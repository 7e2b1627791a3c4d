//! The `tournament` subcommand: the CLI glue around [`carcassonne_bots::tournament`],
//! which plays bot against bot and reports their strength.

use carcassonne_bots::BotLevel;
use carcassonne_bots::tournament::tournament;
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

/// The options of `carcassonne-server tournament`.
#[derive(Args, Debug, Clone)]
pub struct TournamentArgs {
    /// The first bot: random, greedy or mcts.
    #[arg(long)]
    pub a: BotLevel,
    /// The second bot.
    #[arg(long)]
    pub b: BotLevel,
    /// How many games (best even: each deal is played twice, seats swapped).
    #[arg(long, default_value_t = 200)]
    pub games: u32,
    /// Thinking time per move, in milliseconds (only mcts uses it).
    #[arg(long, default_value_t = 200)]
    pub think_ms: u64,
    /// How many games to play at once.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The seed of the first deal (deal k uses seed + k) and of the bots' generators.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs the tournament and prints its report.
pub fn run(args: TournamentArgs) -> ExitCode {
    let report = tournament(
        args.a,
        args.b,
        args.games,
        Duration::from_millis(args.think_ms),
        args.threads,
        args.seed,
    );
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => println!("{text}"),
            Err(error) => {
                eprintln!("cannot write the report: {error}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: TournamentArgs,
    }

    #[test]
    fn the_levels_and_numbers_parse_and_defaults_apply() {
        let command = Command::try_parse_from(["t", "--a", "mcts", "--b", "greedy", "--json"])
            .expect("valid options");
        assert_eq!(
            (command.args.a, command.args.b),
            (BotLevel::Mcts, BotLevel::Greedy)
        );
        assert_eq!((command.args.games, command.args.think_ms), (200, 200));
        assert!(command.args.json);
        assert!(Command::try_parse_from(["t", "--a", "expert", "--b", "random"]).is_err());
    }
}
