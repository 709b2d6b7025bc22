"""Long multi-session conversations with questions whose evidence turns are known, generated.

There is no public long-conversation benchmark on PyPI or npm, and nothing may be fetched
from a model or data hub, so `bench_recall.py` makes its own: the same seed always gives
the same dialogues, byte for byte. This is synthetic data written to resemble the public
benchmarks (two people chatting over months, a session every week or two, facts of
their lives told in passing among small talk), not a real one: the figures it gives are
for comparing modes and versions of this code, not for comparing with other systems.

Each conversation has two speakers and a dozen or more dated sessions. A session mixes
small talk with episodes: one speaker tells a fact of their life (a new pet, a trip, a
broken phone), sometimes split over two turns (a question, and an answer that means
nothing without it: "They did, and I said yes!"); the other speaker's replies and the
small talk share words with the questions without answering them. Questions come in
four categories, worded as a person would ask them, with other words than the evidence's:

- single-hop: one fact ("What animal did Evan bring home?"), one or two evidence turns;
- multi-hop: the same kind of fact told in several sessions ("What kinds of things did
  Evan have broken?"), every such turn is evidence;
- temporal: when it happened ("When did Evan get his new pet?"): the answer is the
  session's date, which each stored turn carries;
- open-domain: an inference from a fact ("Would Maya enjoy a hiking holiday?").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

__all__ = ["Conversation", "Question", "Session", "Turn", "conversations"]

PEOPLE = ["Evan", "Maya", "Jonas", "Priya", "Tomasz", "Aiko", "Lucia", "Daniel", "Fatima", "Oskar", "Nadia",
          "Rafael", "Greta", "Kwame", "Ines", "Hugo", "Leila", "Marco", "Sofia", "Arjun"]
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")


@dataclass(frozen=True)
class Turn:
    id: str
    """Like the public benchmarks' ids: D<session>:<turn>."""
    speaker: str
    text: str
    when: str
    """The session's date, as people write it ("8 May 2023")."""

    @property
    def observation(self) -> str:
        """How the turn is stored: who said it, when, and what."""
        return f"{self.speaker} on {self.when}: {self.text}"


@dataclass
class Session:
    number: int
    when: str
    turns: list[Turn] = field(default_factory=list)


@dataclass(frozen=True)
class Question:
    category: str
    text: str
    evidence: tuple[str, ...]
    """The ids of the turns that hold the answer."""


@dataclass
class Conversation:
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question]


# A topic: what a speaker says (one of several wordings), what fills its slots, and the
# questions it answers. {X} is the speaker, {Y} the other one; slots are drawn once per telling.
TOPICS: list[dict[str, object]] = [
    {"key": "pet", "say": ["We finally adopted a {pet} from the shelter and named it {petname}!",
                           "Big news at home: a little {pet} called {petname} moved in with us this weekend."],
     "slots": {"pet": ["beagle puppy", "tabby kitten", "rescue greyhound", "grey parrot", "pair of rabbits"],
               "petname": ["Biscuit", "Pepper", "Noodle", "Mochi", "Ziggy", "Olive"]},
     "single": ["What animal did {X} bring home, and what is it called?", "What pet did {X} adopt from the shelter?"],
     "temporal": ["When did {X} get a new companion at home?", "When did {X} adopt a pet?"],
     "open": ["Would {X} know something about looking after animals?"]},
    {"key": "music", "say": ["I signed up for {instrument} lessons at the community school, my teacher is "
                             "patient with me.", "I've been practising the {instrument} every evening, scales "
                             "until my fingers hurt."],
     "slots": {"instrument": ["cello", "piano", "violin", "trumpet", "ukulele", "drums"]},
     "single": ["Which musical hobby has {X} picked up?", "What instrument does {X} take lessons for?"],
     "temporal": ["When did {X} start learning to play music?", "When did {X} start the music lessons?"],
     "open": ["Is {X} likely to enjoy going to a classical concert?"]},
    {"key": "job", "split": True,
     "say": ["I have a second interview at {company} on Thursday, for the {role} position."],
     "ask": "So, did {company} make you an offer?", "reply": "They did, and I said yes! I start next month.",
     "slots": {"company": ["Fenwick Labs", "Orbital Foods", "Brightwater Bank", "Tallis Games", "Northwind"],
               "role": ["data analyst", "product manager", "sous-chef", "nurse practitioner", "architect"]},
     "single": ["Where is {X} going to work from now on?", "Which company made {X} an offer?"],
     "temporal": ["When did {X} accept a new job?", "When did {X} say yes to the job offer?"],
     "open": ["Was {X} unhappy enough to look for another employer?"]},
    {"key": "injury", "say": ["I sprained my ankle playing {sport} and I'm on crutches for two weeks.",
                              "Twisted my knee badly at {sport} practice, the physio says no running for a month."],
     "slots": {"sport": ["basketball", "football", "tennis", "volleyball", "squash"]},
     "single": ["How did {X} get hurt?", "Which sport caused {X}'s injury?"],
     "temporal": ["When did {X} get injured?", "When was {X} on crutches or told not to run?"],
     "open": ["Does {X} play any team or racket sports?"]},
    {"key": "family", "say": ["My sister {relative} is getting married in {month}, I'm giving a speech!",
                              "My cousin {relative} announced the wedding date: {month}, in the countryside."],
     "slots": {"relative": ["Hannah", "Clara", "Rosa", "Mei", "Yara"],
               "month": ["June", "September", "October", "April"]},
     "single": ["Who in {X}'s family is tying the knot?", "Whose wedding is {X} going to?"],
     "temporal": ["When did {X} hear about the upcoming family celebration?", "When did {X} mention the wedding?"],
     "open": ["Will {X} be attending a ceremony with relatives this year?"]},
    {"key": "cooking", "say": ["I tried baking my grandmother's {dish} recipe, it came out almost like hers.",
                               "Made {dish} from scratch yesterday using the old recipe card from grandma."],
     "slots": {"dish": ["apple strudel", "sourdough bread", "lemon tart", "pierogi", "baklava"]},
     "single": ["What did {X} make in the kitchen from a family recipe?", "What did {X} bake from grandma's recipe?"],
     "temporal": ["When did {X} cook something from a grandparent's notes?", "When did {X} try the recipe?"],
     "open": ["Does {X} enjoy spending time in the kitchen?"]},
    {"key": "book", "say": ["I'm halfway through {book} and I can't put it down.",
                            "Just finished reading {book}, the ending made me cry on the train."],
     "slots": {"book": ["The Left Hand of Darkness", "Middlemarch", "Station Eleven", "The Remains of the Day",
                        "Piranesi"]},
     "single": ["Which novel has {X} been absorbed in?", "What book was {X} reading?"],
     "temporal": ["When was {X} busy with that story?", "When was {X} reading that book?"],
     "open": ["Would {X} appreciate a gift card for a bookshop?"]},
    {"key": "move", "say": ["We signed the lease on a flat in {place}, moving boxes everywhere now.",
                            "We're relocating to {place} at the end of the month, the new place has a balcony."],
     "slots": {"place": ["Riverside", "the old town", "Greenhill", "Harbour Quarter", "Elm Park"]},
     "single": ["Which neighbourhood is {X} settling into?", "Where is {X}'s new flat?"],
     "temporal": ["When did {X} find a new home?", "When did {X} sign a lease?"],
     "open": ["Is {X} going through a busy and stressful period at home?"]},
    {"key": "outdoors", "say": ["Spent the whole weekend on the trails around {mountain}, slept in a tent.",
                                "We hiked up {mountain} at dawn, the view from the summit was unreal."],
     "slots": {"mountain": ["Mount Tamsin", "the Vell ridge", "Blackcomb peak", "the Ardent hills"]},
     "single": ["Where did {X} go on a trek?", "Which trails did {X} hike?"],
     "temporal": ["When did {X} go walking in the mountains?", "When did {X} go hiking?"],
     "open": ["Would {X} enjoy a camping holiday?"]},
    {"key": "volunteer", "say": ["I've been helping out at the {cause} on Saturday mornings.",
                                 "Signed up to volunteer at the {cause}, my first shift went well."],
     "slots": {"cause": ["animal shelter", "food bank", "children's hospital", "community garden"]},
     "single": ["What charity work does {X} do?", "Where does {X} volunteer?"],
     "temporal": ["When did {X} begin giving time to a good cause?", "When did {X} start volunteering?"],
     "open": ["Does {X} care about helping the local community?"]},
    {"key": "exam", "say": ["I passed my {test} on the second try, so relieved!",
                            "Got the results: I passed the {test}, all those evenings of studying paid off."],
     "slots": {"test": ["driving test", "bar exam", "sommelier certification", "scuba diving course"]},
     "single": ["What qualification did {X} obtain?", "Which test did {X} pass?"],
     "temporal": ["When did {X} succeed at an assessment?", "When did {X} get the exam results?"],
     "open": ["Has {X} been working hard to earn a credential?"]},
    {"key": "crowds", "say": ["Honestly, big crowds make me anxious, I left the {event} after ten minutes.",
                              "I can't stand packed places, the {event} was a nightmare for me."],
     "slots": {"event": ["street festival", "stadium concert", "christmas market", "fan zone"]},
     "single": ["What kind of gathering did {X} find overwhelming?", "Which event did {X} leave because of the crowd?"],
     "temporal": ["When did {X} leave a busy event early?", "When did {X} feel anxious in a crowd?"],
     "open": ["Would {X} like to attend a huge music festival?"]},
]
# Told several times per speaker, in different sessions: each telling is evidence of one question.
MULTI: list[dict[str, object]] = [
    {"key": "broken", "say": ["Ugh, my {thing} {broke} this morning, I'm so annoyed.",
                              "Guess what, the {thing} broke again: it {broke}. Worst week ever."],
     "pairs": [("phone screen", "cracked when I dropped it on the stairs"), ("laptop", "died with a burning smell"),
               ("bike chain", "snapped halfway up the hill"), ("washing machine", "flooded the bathroom"),
               ("car window", "shattered in the hail"), ("headphones", "stopped working in one ear")],
     "question": ["What kinds of things did {X} have broken?", "Which of {X}'s belongings stopped working?"]},
    {"key": "trips", "say": ["Just got back from my trip to {city}, the food there was amazing.",
                             "I'm flying to {city} next week for a conference, first time there."],
     "cities": ["Lisbon", "Kyoto", "Montreal", "Marrakesh", "Oslo", "Buenos Aires", "Hanoi"],
     "question": ["Which places has {X} travelled to?", "Which cities did {X} visit on trips?"]},
    {"key": "hobbies", "say": ["I've started {hobby}, it's surprisingly relaxing.",
                               "New obsession: {hobby}. I spend every free evening on it."],
     "hobbies": ["pottery classes", "rock climbing at the gym", "knitting scarves", "birdwatching",
                 "learning Portuguese", "growing tomatoes on the balcony"],
     "question": ["What pastimes has {X} taken up?", "What new hobbies has {X} started?"]},
]
REPLIES = ["Oh wow, congratulations!", "That's amazing, {X}!", "No way! Tell me more.", "Oh no, I'm sorry to hear "
           "that.", "Haha, that sounds like you.", "That's a big step!", "I'm so happy for you.",
           "Wait, really? Since when?", "Sounds exhausting, take care of yourself.", "Ooh, send me pictures!"]
SMALL_TALK = [
    "Hey {Y}! Long time no see, how have you been?", "Hi! Good to hear from you.", "How was your week?",
    "Pretty hectic, work has been crazy lately.", "Not bad, just trying to keep up with everything.",
    "The weather has been awful, it rained the whole weekend.", "I watched a documentary about whales last night.",
    "Did you see the game on Sunday?", "I need a holiday so badly.", "My neighbour's dog kept barking all night.",
    "We should grab coffee soon.", "Anyway, enough about me, what's new with you?", "Haha, totally.",
    "I've been sleeping terribly, too much screen time probably.", "Traffic this morning was unbelievable.",
    "I keep meaning to call my parents more often.", "Work gave us free pizza on Friday, small wins.",
    "I'm thinking of repainting the living room, maybe green.", "Talk soon, have a great evening!",
    "Same here, it's been a lot.", "Ha, I know what you mean.", "That reminds me, I owe you a message.",
    "My phone keeps running out of battery by lunchtime.", "I read somewhere that walking after dinner helps.",
    "The new café near the station is pretty good.", "Let's plan something for next month.",
    "My team at work is hiring, it's chaos.", "I finally cleaned out the garage.",
    "Bye for now, say hi to everyone!", "I tried a new running route, got completely lost.",
]


def conversations(count: int = 10, sessions: int = 18, seed: int = 28) -> list[Conversation]:
    """`count` conversations of `sessions` sessions each; the same arguments give the same data."""
    rng = random.Random(seed)
    return [_conversation(rng, index, sessions) for index in range(count)]


def _conversation(rng: random.Random, index: int, count: int) -> Conversation:
    a, b = rng.sample(PEOPLE, 2)
    day = date(2023, 1, 1) + timedelta(days=rng.randrange(300) + 37 * index)
    sessions = []
    for number in range(1, count + 1):
        sessions.append(Session(number, f"{day.day} {day:%B %Y}"))
        day += timedelta(days=rng.randrange(4, 21))
    plan: list[list[tuple[str, dict[str, object], object]]] = [[] for _ in sessions]
    for speaker in (a, b):
        for topic in rng.sample(TOPICS, 8):  # each speaker tells eight of the single facts
            plan[rng.randrange(count)].append((speaker, topic, None))
        for topic in MULTI:  # and two or three tellings of each repeated kind, in distinct sessions
            tellings = rng.randrange(2, 4)
            items = rng.sample(_items(topic), tellings)
            for where, item in zip(rng.sample(range(count), tellings), items, strict=True):
                plan[where].append((speaker, topic, item))
    questions: list[Question] = []
    multi: dict[tuple[str, str], list[str]] = {}
    for session, episodes in zip(sessions, plan, strict=True):
        rng.shuffle(episodes)
        first, other = (a, b) if rng.random() < 0.5 else (b, a)
        turns: list[tuple[str, str]] = [(first, rng.choice(SMALL_TALK[:2]).format(Y=other)),
                                        (other, rng.choice(SMALL_TALK[1:5]))]
        evidence: list[tuple[Question, list[int]]] = []
        for speaker, topic, item in episodes:
            listener = b if speaker == a else a
            for _ in range(rng.randrange(1, 5)):
                turns.append((rng.choice((a, b)), rng.choice(SMALL_TALK[2:])))
            if item is not None:
                at = len(turns)
                turns.append((speaker, _say_multi(rng, topic, item)))
                multi.setdefault((speaker, str(topic["key"])), []).append(f"D{session.number}:{at + 1}")
                turns.append((listener, rng.choice(REPLIES).format(X=speaker)))
                continue
            slots = {k: rng.choice(v) for k, v in topic["slots"].items()}  # type: ignore[attr-defined]
            said = rng.choice(topic["say"]).format(**slots)  # type: ignore[attr-defined]
            at = len(turns)
            turns.append((speaker, said))
            held = [at]
            if topic.get("split"):
                turns.append((listener, rng.choice(REPLIES).format(X=speaker)))
                for _ in range(rng.randrange(1, 3)):
                    turns.append((rng.choice((a, b)), rng.choice(SMALL_TALK[2:])))
                turns.append((listener, str(topic["ask"]).format(**slots)))
                turns.append((speaker, str(topic["reply"])))
                held = [len(turns) - 2, len(turns) - 1]  # the offer, asked and answered
            else:
                turns.append((listener, rng.choice(REPLIES).format(X=speaker)))
            for category, key in (("single-hop", "single"), ("temporal", "temporal"), ("open-domain", "open")):
                if category == "single-hop" or rng.random() < 0.6:
                    asked = rng.choice(topic[key]).format(X=speaker)  # type: ignore[attr-defined]
                    evidence.append((Question(category, asked, ()), held))
        turns.append((other, rng.choice(SMALL_TALK[-12:])))
        session.turns = [Turn(f"D{session.number}:{i + 1}", who, text, session.when)
                         for i, (who, text) in enumerate(turns)]
        for question, held in evidence:
            questions.append(Question(question.category, question.text,
                                      tuple(session.turns[i].id for i in held)))
    for (speaker, key), ids in sorted(multi.items()):
        topic = next(t for t in MULTI if t["key"] == key)
        asked = rng.choice(topic["question"]).format(X=speaker)  # type: ignore[arg-type]
        questions.append(Question("multi-hop", asked, tuple(ids)))
    return Conversation((a, b), sessions, questions)


def _items(topic: dict[str, object]) -> list[object]:
    for key in ("pairs", "cities", "hobbies"):
        if key in topic:
            return list(topic[key])  # type: ignore[call-overload]
    raise KeyError(topic["key"])


def _say_multi(rng: random.Random, topic: dict[str, object], item: object) -> str:
    template = rng.choice(topic["say"])  # type: ignore[arg-type]
    if isinstance(item, tuple):
        return str(template).format(thing=item[0], broke=item[1])
    return str(template).format(city=item, hobby=item)
