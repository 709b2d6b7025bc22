"""A labelled set for `suggest_cleanup`: which pairs of entities are one, which are not.

Real people's names, each written the ways memories write them (in full, a first name or
surname given as an initial, a title, a one-letter typo, another case), and hard negatives:
relatives and strangers who share a surname ("Marie Curie", "Pierre Curie"), people who
share a first name, one name used for two kinds of thing (a person and a language),
organisations that differ by one word. Plus stale facts and repeated observations with
their answers. Deterministic for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Labelled", "labelled_set"]

PEOPLE = """Ada Lovelace; Charles Babbage; Grace Hopper; Alan Turing; Katherine Johnson; Margaret Hamilton;
Claude Shannon; John McCarthy; Barbara Liskov; Donald Knuth; Edsger Dijkstra; Frances Allen; Tim Berners-Lee;
Dennis Ritchie; Ken Thompson; Linus Torvalds; Guido van Rossum; Bjarne Stroustrup; James Gosling; Anders Hejlsberg;
Radia Perlman; Hedy Lamarr; Rosalind Franklin; Dorothy Hodgkin; Lise Meitner; Emmy Noether; Srinivasa Ramanujan;
Sophie Germain; Carl Friedrich Gauss; Leonhard Euler; Isaac Newton; Gottfried Leibniz; Blaise Pascal;
Rene Descartes; Pierre de Fermat; Niels Bohr; Werner Heisenberg; Erwin Schrodinger; Paul Dirac; Max Planck;
Albert Einstein; Richard Feynman; Enrico Fermi; Chien-Shiung Wu; Vera Rubin; Cecilia Payne; Henrietta Leavitt;
Annie Jump Cannon; Edwin Hubble; Carl Sagan; Jocelyn Bell Burnell; Stephen Hawking; Subrahmanyan Chandrasekhar;
Gregor Mendel; Charles Darwin; Alfred Russel Wallace; Barbara McClintock; Francis Crick; James Watson;
Jennifer Doudna; Emmanuelle Charpentier; Louis Pasteur; Alexander Fleming; Jonas Salk; Florence Nightingale;
Elizabeth Blackwell; Tu Youyou; Rachel Carson; Jane Goodall; Dian Fossey; Wangari Maathai; Mary Anning;
Nikola Tesla; Thomas Edison; Michael Faraday; James Clerk Maxwell; Heinrich Hertz; Guglielmo Marconi;
Alexander Graham Bell; Hertha Ayrton; Lord Kelvin; Andre-Marie Ampere; Alessandro Volta; Georg Ohm;
Johannes Kepler; Galileo Galilei; Nicolaus Copernicus; Tycho Brahe; Hypatia of Alexandria; Muhammad al-Khwarizmi;
Ibn al-Haytham; Omar Khayyam; Zhang Heng; Shen Kuo; Aryabhata; Brahmagupta; Fibonacci;
Mary Somerville; Caroline Herschel; William Herschel; Maria Mitchell; Williamina Fleming; Annie Easley;
Dorothy Vaughan; Mary Jackson; Katherine Coleman; Evelyn Boyd Granville; Shirley Ann Jackson; Mae Jemison;
Sally Ride; Valentina Tereshkova; Yuri Gagarin; Neil Armstrong; Buzz Aldrin; John Glenn; Chris Hadfield;
Peggy Whitson; Kalpana Chawla; Ellen Ochoa; Katalin Kariko; Drew Weissman; Frances Arnold; Donna Strickland;
Andrea Ghez; Jennifer Widom; Fei-Fei Li; Daphne Koller; Yoshua Bengio; Geoffrey Hinton; Yann LeCun""".split(";")
"""Real people, first name first."""

SHARED_SURNAME = [("Marie Curie", "Pierre Curie"), ("Marie Curie", "Irene Curie"), ("William Herschel",
                  "Caroline Herschel"), ("John Herschel", "William Herschel"), ("Mary Jackson", "Shirley Ann Jackson"),
                  ("Katherine Johnson", "Lyndon Johnson"), ("James Watson", "Thomas Watson"),
                  ("Ada Lovelace", "Byron Lovelace"), ("Francis Crick", "Odile Crick"), ("Henry Ford", "Edsel Ford"),
                  ("Paul Dirac", "Margit Dirac"), ("Niels Bohr", "Aage Bohr"), ("John Glenn", "Annie Glenn"),
                  ("Charles Darwin", "Erasmus Darwin"), ("Grace Hopper", "Vincent Hopper")]
"""Relatives and strangers who share a surname: never one."""
SHARED_FIRST = [("John McCarthy", "John Glenn"), ("Mary Anning", "Mary Somerville"), ("James Watson", "James Gosling"),
                ("Alan Turing", "Alan Kay"), ("Carl Sagan", "Carl Friedrich Gauss"), ("Paul Dirac", "Paul Allen"),
                ("Barbara Liskov", "Barbara McClintock"), ("Dorothy Vaughan", "Dorothy Hodgkin")]
"""People who share a first name: never one."""
NEAR_NAMES = [("Robert Brown", "Roberta Brown"), ("Dan Lee", "Dana Lee"), ("Carl Diaz", "Carla Diaz"),
              ("Louis Martin", "Louise Martin"), ("Daniel Kim", "Danielle Kim"), ("Bryan Adams", "Ryan Adams"),
              ("Ivan Petrov", "Ivana Petrov"), ("Jean Dupont", "Joan Dupont"), ("Sara Cohen", "Sarah Cohen"),
              ("Kelly Grant", "Kelley Grant")]
"""Relatives or strangers whose first names are a letter or two apart: never one (though a
typo looks the same: "Sara"/"Sarah" is the hardest case here)."""
OTHER_KINDS = [("Jaguar", "animal", "Jaguar", "car maker"), ("Python", "language", "Python", "animal"),
               ("Mercury", "planet", "Mercury", "element"), ("Java", "language", "Java", "island"),
               ("Apple", "company", "Apple", "fruit")]
"""One name for two kinds of thing: not one."""
ORGANISATIONS = [("Acme Billing", "Acme Shipping"), ("Payments Team", "Platform Team"),
                 ("Project Apollo", "Project Gemini"), ("Northwind Labs", "Northwind Traders"),
                 ("Release 4.1", "Release 4.2"), ("Sprint 12", "Sprint 13"), ("Server 1", "Server 7")]
"""Things that differ by one word or number: never one."""

STALE = [("lives in Paris", "moved to Berlin"), ("works at Google", "joined Anthropic"),
         ("prefers tea", "prefers coffee"), ("uses vim", "switched to emacs"), ("status: planning", "status: shipped"),
         ("email: a@x.org", "email: b@y.org"), ("is based in Lisbon", "lives in Porto"),
         ("reports to Dana", "reports to Eli")]
"""(older, newer) observations of one entity: the older is stale."""
NOT_STALE = [("lives in Paris", "likes Berlin"), ("works at Google", "visited Anthropic"),
             ("prefers tea", "drinks water"), ("uses vim", "uses git"), ("lives in Paris", "lives in Paris, France")]
"""(older, newer) observations that do not supersede one another ("uses" takes many values: a
flagged pair there is counted as a false positive, and so it is)."""
DUPLICATE = [("Prefers dark mode", "prefers dark mode."),
             ("works on the billing service", "Works on the billing service"),
             ("meets the team every Monday at 10", "meets the team every monday at 10"),
             ("wants weekly summaries by email", "wants weekly summaries by e-mail")]
NOT_DUPLICATE = [("meets at 10", "meets at 11"), ("owns the billing service", "owns the shipping service"),
                 ("joined in 2019", "left in 2019")]


@dataclass
class Labelled:
    """Entities to write, and the answers."""

    entities: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(name, type, observations)"""
    same: set[frozenset[str]] = field(default_factory=set)
    """Pairs of names that are one entity."""
    stale: set[tuple[str, str]] = field(default_factory=set)
    """(entity, older observation) pairs that are stale."""
    duplicate: set[tuple[str, frozenset[str]]] = field(default_factory=set)
    """(entity, the two observations) that say one thing."""


def _typo(rng: random.Random, word: str) -> str:
    at = rng.randrange(1, len(word) - 1)
    kind = rng.choice(("drop", "double", "swap"))
    if kind == "drop":
        return word[:at] + word[at + 1:]
    if kind == "double":
        return word[:at] + word[at] + word[at:]
    return word[:at] + word[at + 1] + word[at] + word[at + 2:]


def _variant(rng: random.Random, name: str, firsts: dict[str, int]) -> tuple[str, str]:
    words = name.split()
    kinds = ["initial", "title", "case"] + (["typo"] if len(words[-1]) >= 6 else [])
    if firsts[words[0]] == 1:  # a first name alone is one person only where no one else has it
        kinds.append("first")
    if len(words) == 3:
        kinds.append("no middle")
    kind = rng.choice(kinds)
    if kind == "initial":
        return " ".join([f"{words[0][0]}.", *words[1:]]), kind
    if kind == "title":
        return f"Dr. {name}", kind
    if kind == "case":
        return name.lower(), kind
    if kind == "first":
        return words[0], kind
    if kind == "no middle":
        return f"{words[0]} {words[-1]}", kind
    return " ".join([*words[:-1], _typo(rng, words[-1])]), kind


def labelled_set(seed: int = 7) -> Labelled:
    """The labelled set: every person once as written, half of them once more as a variant."""
    rng = random.Random(seed)
    out = Labelled()
    names: dict[str, str] = {}

    def add(name: str, kind: str, observations: list[str]) -> None:
        if name not in names:
            names[name] = kind
            out.entities.append((name, kind, observations))

    people = [p.strip() for p in PEOPLE if p.strip()]
    everyone = {*people, *(n for pair in SHARED_SURNAME + SHARED_FIRST + NEAR_NAMES for n in pair)}
    firsts: dict[str, int] = {}
    for person in everyone:
        firsts[person.split()[0]] = firsts.get(person.split()[0], 0) + 1
    for index, person in enumerate(people):
        add(person, "person", [f"known for work number {index}", "a scientist"])
        if index % 2 == 0:
            variant, _ = _variant(rng, person, firsts)
            if variant not in names:
                add(variant, "person", [f"known for work number {index}"] if index % 4 == 0 else ["a name seen once"])
                out.same.add(frozenset((person, variant)))
    for first, second in SHARED_SURNAME + SHARED_FIRST + NEAR_NAMES:
        add(first, "person", ["a person"])
        add(second, "person", ["another person"])
    for first_name, first_kind, _, second_kind in OTHER_KINDS:
        add(first_name, first_kind, [f"a {first_kind}"])
        add(f"{first_name} ({second_kind})", second_kind, [f"a {second_kind}"])
    for first, second in ORGANISATIONS:
        add(first, "organisation", ["an organisation"])
        add(second, "organisation", ["another organisation"])
    for index, (older, newer) in enumerate(STALE):
        entity = f"Colleague {chr(65 + index)}"
        add(entity, "colleague", [older, "a colleague", newer])
        out.stale.add((entity, older))
    for index, (older, newer) in enumerate(NOT_STALE):
        add(f"Contact {chr(65 + index)}", "contact", [older, newer])
    for index, (first, second) in enumerate(DUPLICATE):
        entity = f"Teammate {chr(65 + index)}"
        add(entity, "teammate", [first, "a teammate", second])
        out.duplicate.add((entity, frozenset((first, second))))
    for index, (first, second) in enumerate(NOT_DUPLICATE):
        add(f"Partner {chr(65 + index)}", "partner", [first, second])
    return out
