"""alice, a traveller planning trips with an assistant: hotels, trains, food, gear orders."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryStore

import random
from datetime import datetime, timedelta

from .weave import Fact, Persona, Planted, Topic, Turn, weave

CITIES = ("Lisbon", "Kyoto", "Oslo", "Seville", "Edinburgh", "Ljubljana", "Copenhagen", "Naples", "Vienna", "Tallinn")
PLACE = {
    "city": CITIES,
    "hotel": (
        "Casa do Rio",
        "Hotel Sora",
        "Fjordlys Inn",
        "Patio Azul",
        "The Grey Close",
        "Vila Zmaj",
        "Havnehus",
        "Palazzo Lume",
        "Gasthof Linde",
        "Old Town Loft",
    ),
    "price": ("96", "118", "124", "139", "142", "155", "171", "188"),
    "nights": ("two", "three", "four", "five"),
    "month": ("March", "April", "May", "June", "September", "October"),
    "order": ("ORD-31907", "ORD-55120", "ORD-62284", "ORD-70315", "ORD-19446", "ORD-86702"),
    "item": (
        "packing cubes",
        "a travel adapter",
        "a merino base layer",
        "a 40-litre backpack",
        "a rain shell",
        "a neck pillow",
        "compression socks",
        "a power bank",
    ),
    "train": ("the 08:12 Alfa Pendular", "the 10:40 regional", "the 07:55 intercity", "the 16:20 express"),
    "dish": ("mushroom risotto", "a chickpea stew", "grilled halloumi", "vegetable tempura", "spinach gnocchi"),
    "weekday": ("Monday", "Wednesday", "Thursday", "Friday", "Saturday"),
    "sight": ("the old fortress", "the botanical garden", "the harbour walk", "the modern art museum", "the covered market"),
}

TOPICS = [
    Topic(
        "hotels-{n}",
        (
            Turn(
                "Find me a hotel in {city} for {nights} nights in {month}.",
                "I found {hotel} at {price} € a night, quiet street, good reviews.",
                "hotel_search",
                ("city", "nights", "month"),
            ),
            Turn("Is {hotel} close to the centre?", "About a 10-minute walk from the main square; a tram stops outside."),
            Turn(
                "Does {hotel} have a room without carpets? Dust bothers me.",
                "Yes, {hotel}'s superior rooms have wooden floors; I noted it on the request.",
            ),
            Turn(
                "Can you check if breakfast at {hotel} is vegetarian-friendly?",
                "They list a buffet with fruit, eggs, cheese and {dish} most mornings.",
            ),
            Turn(
                "Hold the room at {hotel} please.",
                "Held at {price} € a night, free cancellation until 48 hours before arrival.",
                "hotel_hold",
                ("hotel", "price"),
            ),
            Turn("What's the check-in time at {hotel}?", "Check-in from 3 pm, and {hotel} keeps luggage if you arrive earlier."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "trains-{n}",
        (
            Turn(
                "How do I get from the airport to {city} centre?",
                "The airport train runs every 15 minutes and takes about 25 minutes; a taxi is roughly 30 €.",
            ),
            Turn("Book {train} for me.", "Booked {train}, seat 42 in coach 3, e-ticket sent to your inbox.", "train_booking", ("train",)),
            Turn(
                "Is there a day pass for public transport in {city}?",
                "Yes, a 24-hour pass covers metro, trams and buses; buy it at any station machine.",
            ),
            Turn(
                "What if {train} is late and I miss the connection?",
                "With a through ticket you may take the next train at no cost; keep the ticket.",
            ),
            Turn("Are trains in {month} usually busy?", "Weekday mornings are busy with commuters; midday trains are quieter and cheaper."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "food-{n}",
        (
            Turn(
                "Where can I eat well in {city} without meat?",
                "Try the covered market's stalls; one serves {dish} that locals rave about.",
                "places_search",
                ("city",),
            ),
            Turn(
                "Book a table for two in {city} on {weekday} evening.",
                "Booked for two at 8 pm on {weekday}; they confirmed by text.",
                "table_booking",
                ("city", "weekday"),
            ),
            Turn("Any bakery near {hotel} for early breakfast?", "There's a small bakery two streets away that opens at 7 am."),
            Turn("Is tipping expected in {city}?", "Rounding up or leaving 5-10% for good service is common but not required."),
            Turn("Suggest a dish I must try there.", "Order {dish}; ask for it without anchovies, they sometimes add them."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "sights-{n}",
        (
            Turn(
                "What should I see in {city} if I only have one day?",
                "Start with {sight}, lunch near the river, then the viewpoint at sunset.",
            ),
            Turn(
                "Do I need tickets in advance for {sight}?",
                "Weekends sell out; book a timed slot online a few days ahead.",
                "ticket_search",
                ("sight",),
            ),
            Turn("Which places in {city} are quiet in the early morning?", "{sight} opens at 9 and is nearly empty for the first hour."),
            Turn(
                "Plan a walking route between the main sights of {city}.",
                "A 6 km loop: old town, {sight}, the harbour, back along the river. About 3 hours with stops.",
            ),
            Turn("Is a guided tour of {sight} in {city} worth it?", "For {sight}, yes: the guides explain what the signs leave out."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "gear-orders-{n}",
        (
            Turn(
                "Order {item} for the trip.", "Ordered {item}; order number {order}, delivery in 3-5 days.", "shop_order", ("item", "order")
            ),
            Turn(
                "Has {order} shipped yet?",
                "{order} left the warehouse this morning; tracking shows delivery on Thursday.",
                "order_status",
                ("order",),
            ),
            Turn("Add {item} to order {order}.", "Added {item} to {order}; delivery is unchanged."),
            Turn("Can I return {item} if it doesn't fit?", "Yes, 30 days free returns; keep the tags on."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "budget-{n}",
        (
            Turn(
                "How much have I spent on the {city} trip so far?",
                "Hotel {price} € a night for {nights} nights plus the train: roughly on budget.",
                "budget_summary",
                ("city",),
            ),
            Turn("Is {city} expensive for food?", "Lunch menus run 12-16 €, dinner 25-40 € a person with a drink."),
            Turn(
                "Put aside {price} € for museums and transport in {city}.",
                "Done: {price} € reserved for museums and transport in the {city} budget.",
            ),
            Turn("Do shops in {city} take cards?", "Almost everywhere in {city}; keep a little cash for markets and small cafés."),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
    Topic(
        "packing-{n}",
        (
            Turn(
                "What's the weather in {city} in {month}?",
                "Mild days around 15-19 °C, cool evenings, some rain: pack layers.",
                "weather_lookup",
                ("city", "month"),
            ),
            Turn("Make me a packing list for {nights} nights.", "Layers, a rain shell, walking shoes, adapter, medication, {item}."),
            Turn("Do I need a plug adapter in {city}?", "Check the sockets for {city}; if they differ, {item} from your order covers it."),
            Turn(
                "Remind me to pack my allergy tablets for {city}.",
                "Reminder set for the evening before you leave for {city}: allergy tablets.",
            ),
        ),
        PLACE,
        ("city", "hotel", "month", "nights"),
    ),
]

PLANTED = [
    Planted(
        55,
        "trip-lisbon",
        "I'm planning a trip to Lisbon in March, can you help?",
        "Of course! March is mild in Lisbon, around 17 °C. How many days?",
        "start",
    ),
    Planted(
        54.9,
        "trip-lisbon",
        "I don't eat meat or fish any more, so keep restaurant picks to that.",
        "Noted: vegetarian from now on; I'll only suggest places with real vegetarian mains.",
        "diet",
    ),
    Planted(
        54,
        "trip-lisbon",
        "Hold a room near Alfama under 150 euros a night.",
        "Memmo Alfama at 142 € a night with a river view is held for 48 hours.",
        "hotel",
        {"name": "hotel_hold", "arguments": {"city": "Lisbon", "max_price": 150}, "result": "Memmo Alfama held"},
    ),
    Planted(
        53,
        "trip-lisbon",
        "Please avoid rooms where pets are allowed; cats make me sneeze badly.",
        "Asked for a pet-free floor because of your cat allergy.",
        "allergy",
    ),
    Planted(50, "trip-lisbon", "Set my budget for the Lisbon trip to 1000 euros.", "Budget set to 1000 € for Lisbon.", "budget1"),
    Planted(
        21,
        "moving",
        "Big news: I packed up the flat and I'm settling in Porto from now on.",
        "Congratulations on the move! I'll plan trips from Porto from now on.",
        "moved",
    ),
    Planted(
        20,
        "trip-lisbon",
        "Raise the Lisbon budget to 1200 euros, Maria is coming along.",
        "Budget raised to 1200 €; I'll look for a twin room for the nights Maria is there.",
        "budget2",
    ),
    Planted(
        19,
        "trip-lisbon",
        "I'll take the train from Porto instead of flying.",
        "The Alfa Pendular takes under 3 hours to Lisbon; I'll book it.",
        "train",
    ),
    # An exact identifier among near misses (transposed digits, one digit off).
    Planted(
        16,
        "gear-orders-returns",
        "Where is order ORD-48213? The hiking boots still haven't arrived.",
        "ORD-48213 is stuck at the Porto depot; the courier says it will be delivered tomorrow.",
        "boots",
        {"name": "order_status", "arguments": {"order": "ORD-48213"}, "result": "held at depot"},
    ),
    Planted(
        15.5,
        "gear-orders-returns",
        "Order ORD-48231 came with the wrong size of rain trousers.",
        "I opened a return for ORD-48231 and ordered size M instead.",
    ),
    Planted(
        15,
        "gear-orders-returns",
        "Cancel ORD-42813, I found the daypack cheaper elsewhere.",
        "ORD-42813 is cancelled; the refund takes 3-5 days.",
    ),
    Planted(14.5, "gear-orders-returns", "Did ORD-48218 include the spare laces?", "Yes, ORD-48218 shipped with two pairs of spare laces."),
    Planted(14, "gear-orders-returns", "Track ORD-84213 please.", "ORD-84213 was delivered to your letterbox yesterday."),
    # Near duplicates: the same words, different meanings; only semantics tells them apart.
    Planted(
        12,
        "flights-kyoto",
        "My flight to Kyoto was cancelled by the airline.",
        "Sorry! I'm rebooking you on the next available flight to Osaka with a train to Kyoto.",
        "cancelled",
    ),
    Planted(
        11.9,
        "flights-kyoto",
        "My flight to Kyoto was confirmed by the airline.",
        "Great, seat 23A is confirmed and the booking reference is in your inbox.",
    ),
    Planted(
        11.8,
        "flights-kyoto",
        "My flight to Kyoto was delayed by the airline.",
        "A two-hour delay; your train connection in Osaka still works.",
    ),
    Planted(
        9,
        "trip-day-trips",
        "Which day trip from Lisbon is best for someone who hates crowds?",
        "Évora: quieter than Sintra, and the Chapel of Bones is worth the visit.",
    ),
]

FACTS = [
    Fact("alice", "lives_in", "Lisbon", 400, "start"),
    Fact("alice", "lives_in", "Porto", 21, "moved"),
    Fact("alice", "diet", "pescatarian", 300),
    Fact("alice", "diet", "vegetarian", 54.9, "diet"),
    Fact("alice", "allergy", "cats", 53, "allergy", confidence=0.9),
    Fact("alice", "trip_budget", "1000 EUR", 50, "budget1"),
    Fact("alice", "trip_budget", "1200 EUR", 20, "budget2"),
    Fact("alice", "travels_with", "her sister Maria (sometimes)", 20, "budget2"),
    Fact("alice", "next_trip", "Lisbon, 12-17 March 2027", 55, "start"),
    Fact("alice", "next_trip", "Kyoto, April 2027", 12, "cancelled"),
    Fact("alice", "seat_preference", "window", 60),
    Fact("alice", "hotel_hold", "Memmo Alfama, 142 EUR a night", 54, "hotel"),
]

BLOCKS = [
    ("persona", "Friendly travel planner. Concise, practical, mentions prices in euros."),
    ("human", "Alice, lives in Porto (moved from Lisbon), vegetarian, allergic to cats, sometimes travels with her sister Maria."),
    ("goals", "Plan a 5-day Lisbon trip in March within 1200 €; then Kyoto in April."),
]


# What the blocks said before (days ago, block, content): the agent's picture of Alice as it grew.
EARLIER_BLOCKS: list[tuple[float, str, str]] = [
    (56, "persona", "Friendly travel planner. Concise, practical."),
    (55, "human", "Alice, lives in Lisbon, pescatarian, allergic to cats."),
    (55, "goals", "Plan a 5-day Lisbon trip in March."),
    (54.8, "human", "Alice, lives in Lisbon, vegetarian, allergic to cats."),
    (50, "goals", "Plan a 5-day Lisbon trip in March within 1000 €."),
    (21, "human", "Alice, lives in Porto (moved from Lisbon), vegetarian, allergic to cats."),
    (20, "goals", "Plan a 5-day Lisbon trip in March within 1200 €."),
]


def working(store: MemoryStore, user_id: str | None, ids: dict[str, str]) -> None:
    """The Lisbon trip, mid-task: two checkpoints, the second after the train was booked."""
    trip = store.session("trip-lisbon", user_id=user_id)
    trip.set("destination", "Lisbon")
    trip.set("dates", {"from": "2027-03-12", "to": "2027-03-17"})
    trip.set("hotel_hold", {"name": "Memmo Alfama", "price_eur": 142, "episode": ids["hotel"]}, ttl=timedelta(hours=48))
    trip.set_task_state("Book the Lisbon trip", total_steps=5, data={"booked": ["hotel"]})
    trip.update_task_progress(2)
    trip.append_scratchpad("User prefers quiet places; avoid Sintra at weekends.")
    trip.append_scratchpad("Hotel hold expires in 48 h; confirm before then.")
    trip.create_checkpoint("after hotel hold")
    trip.set("transport", "Alfa Pendular train from Porto")
    trip.update_task_progress(3, data={"booked": ["hotel", "train"]})
    trip.append_scratchpad("Moved to Porto: plan around the train, not a flight.")
    trip.create_checkpoint("after train booked")
    kyoto = store.session("flights-kyoto", user_id=user_id)
    kyoto.set("rebooking", {"from": "KIX", "train": "Haruka express"}, ttl=timedelta(days=3))
    kyoto.set_task_state("Rebook the cancelled Kyoto flight", total_steps=3, current_step=1)
    kyoto.append_scratchpad("Airline owes a refund for the cancelled leg; claim within 30 days.")
    returns = store.session("gear-orders-returns", user_id=user_id)
    returns.set("open_orders", ["ORD-48213", "ORD-48231"])


def persona(rng: random.Random, now: datetime) -> Persona:
    episodes, keys = weave(rng, TOPICS, now=now, days=56, sessions=50, turns=(4, 7), planted=PLANTED, model="travel-agent-2")
    return Persona("alice", episodes, keys, BLOCKS, FACTS, working, EARLIER_BLOCKS)
