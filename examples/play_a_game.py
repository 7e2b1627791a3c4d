"""Play a complete two-player game against a running carcassonne-server.

    python3 -m venv .venv && .venv/bin/pip install websockets
    .venv/bin/python examples/play_a_game.py [http://127.0.0.1:8080]

Creates a lobby as "ann", joins it as "bob", starts it, connects both players over
WebSocket and has each pick a random legal move (the server sends the player to move
every legal move, so no rules engine is needed here) until the final scoring.
"""

import asyncio
import json
import random
import sys
import urllib.request

import websockets

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"


def post(path, body, token=None):
    request = urllib.request.Request(BASE + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(request) as response:
        return json.load(response)


def flat_moves(legal):
    """The moves `legal_moves` groups (docs/protocol.md, "Legal moves"), as commands send them."""
    moves = [{"type": "place_tile", "x": x, "y": y, "rotation": r}
             for x, y, rotations in legal.get("place_tile", []) for r in rotations]
    if legal.get("pass"):
        moves.append({"type": "pass"})
    moves += [{"type": "place_figure", "figure": figure, "spot": spot}
              for figure, spots in legal.get("place_figure", {}).items() for spot in spots]
    if legal.get("recall_abbot"):
        moves.append({"type": "recall_abbot"})
    moves += [{"type": "festival_return", "x": x, "y": y, "spot": spot}
              for x, y, spot in legal.get("festival_return", [])]
    return moves


async def player(name, game_id, token, done):
    url = BASE.replace("http", "ws", 1) + "/ws/games/" + game_id
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "hello", "token": token}))
        seq, commands = 0, 0
        async for text in ws:
            message = json.loads(text)
            kind = message["type"]
            if kind in ("snapshot", "update", "your_turn"):
                seq = message["seq"]
                for event in message.get("events", []):
                    if event["type"] == "feature_scored" and event["scorers"]:
                        print(f"  {event['kind']} scored {event['points']} for seats {event['scorers']}")
                    if event["type"] == "game_over":
                        print(f"{name}: final scores {event['final_scores']}, winners {event['winners']}")
                        done.set()
                        return
                legal = message.get("legal_moves")
                if legal:  # present only when it is this player's move
                    moves = flat_moves(legal)
                    figures = [m for m in moves if m["type"] == "place_figure"]
                    move = random.choice(figures) if figures and random.random() < 0.5 else random.choice(moves)
                    commands += 1
                    await ws.send(json.dumps({"type": "command", "id": f"{name}-{commands}", "seq": seq, "move": move}))
            elif kind == "rejected":
                print(f"{name}: rejected {message['error']}")
    raise SystemExit(f"{name}: the connection ended before the game did")


async def main():
    created = post("/api/lobbies", {"name": "demo", "seats": 2, "rules": {}, "display_name": "ann"})
    game_id, ann = created["lobby"]["id"], created["seat_token"]
    bob = post(f"/api/lobbies/{game_id}/join", {"display_name": "bob"})["seat_token"]
    done = asyncio.Event()
    players = [asyncio.create_task(player("ann", game_id, ann, done)),
               asyncio.create_task(player("bob", game_id, bob, done))]
    await asyncio.sleep(0.2)  # let both connect and see the lobby
    post(f"/api/lobbies/{game_id}/start", {}, token=ann)
    await asyncio.gather(*players)
    print(f"record: {BASE}/api/matches/{game_id}/record")


asyncio.run(main())
