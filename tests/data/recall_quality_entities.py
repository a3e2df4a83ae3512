"""Hand-written names, identifiers and cross-tenant near-copies for the hard recall-quality set.

Names and identifiers come in groups of four memories that say the same kind of thing about
look-alike people, places or ids; two of each group are asked about, so every target has
near-miss neighbours (a transposed digit, one character off, a shared prefix, a similar name).
"""

# (tenant, (input, output) with {name} and {detail}, question with {name},
#  [(name, detail) x 4], indexes of the two that are asked about)
NAMES = [
    (
        "dana",
        ("Handover from {name}: {detail}.", "Thanks, {name}'s notes are in the on-call doc now."),
        "What did {name} say in the on-call handover?",
        [
            ("Tomasz", "the Kafka consumer lag alert is noisy, ignore it below five thousand"),
            ("Tomas", "the certificate on the API gateway renews itself on the 3rd, don't touch it"),
            ("Thomas", "keep an eye on disk usage on the second database replica"),
            ("Tom", "the Stripe webhook retries are backed up since the deploy"),
        ],
        (0, 2),
    ),
    (
        "dana",
        ("New starter: {name} joins on {detail}.", "I'll set up {name}'s laptop and accounts before then."),
        "When does {name} start?",
        [
            ("Aleksandra", "the 3rd of March on the payments team"),
            ("Alexandra", "the 17th of February on the data platform team"),
            ("Alessandra", "the 1st of April as our new engineering manager"),
            ("Alexander", "the 10th of March as a site reliability intern"),
        ],
        (1, 3),
    ),
    (
        "dana",
        ("For the team offsite, {name} looks promising: {detail}.", "Added {name} to the offsite shortlist."),
        "What did we find out about the offsite venue in {name}?",
        [
            ("Harrogate", "a converted mill with rooms for twenty, £140 a head"),
            ("Halifax", "a big meeting room at the Piece Hall but no rooms on site"),
            ("Hebden Bridge", "cheap, walkable, but the trains are unreliable in winter"),
            ("Haworth", "a small hotel that would close just for us midweek"),
        ],
        (0, 3),
    ),
    (
        "marco",
        ("{name} rang about the wholesale order: {detail}.", "I've updated {name}'s standing order."),
        "What did {name} want changed in the wholesale order?",
        [
            ("Seren", "double the decaf from next week, it's selling out"),
            ("Sarah", "switch from 1 kg bags to 250 g retail bags"),
            ("Serena", "pause deliveries for the two weeks the café is being refitted"),
            ("Sera", "add a second espresso blend that's less chocolatey"),
        ],
        (0, 2),
    ),
    (
        "marco",
        ("Cupping notes on the {name} sample: {detail}.", "Logged the {name} cupping notes."),
        "How did the {name} sample taste?",
        [
            ("Huila", "red apple, panela, a bit thin at lighter roasts"),
            ("Huehuetenango", "milk chocolate and almond, very clean, would work for espresso"),
            ("Sidamo", "bergamot and peach, too delicate for milk drinks"),
            ("Yirgacheffe", "jasmine and lemon, stunning but pricey at £9 a kilo"),
        ],
        (1, 3),
    ),
    (
        "leila",
        ("Meeting with {name} about the flat: {detail}.", "I've added {name}'s comments to the project notes."),
        "What does {name} want changed in the flat design?",
        [
            ("Mathilde Roux", "she wants the kitchen opened onto the living room"),
            ("Mathieu Roux", "he wants a second bathroom even if the bedrooms shrink"),
            ("Martine Roussel", "she wants the original parquet kept everywhere"),
            ("Mathilde Rey", "she wants a bigger balcony and fewer windows to the street"),
        ],
        (0, 3),
    ),
    (
        "leila",
        ("Site visit in {name} today: {detail}.", "Noted the {name} site issues for the team meeting."),
        "What came up at the site visit in {name}?",
        [
            ("Villeurbanne", "the contractor poured the slab before the plumbing inspection"),
            ("Vaise", "the scaffold blocks the neighbour's garage, they are furious"),
            ("Vénissieux", "the windows delivered are the wrong colour, anthracite not black"),
            ("Vaulx-en-Velin", "water in the basement after the storm, the drain is blocked"),
        ],
        (0, 2),
    ),
    (
        "leila",
        ("For the summer, the place in {name} looks good: {detail}.", "Saved the {name} option for the family holiday."),
        "What did we think of the holiday place in {name}?",
        [
            ("Annecy", "lake view, two bedrooms, but no pool and 1,900 € a week"),
            ("Antibes", "a pool and a garden, twenty minutes' walk from the beach"),
            ("Arles", "an old mas with a big garden, hot in July without air conditioning"),
            ("Angers", "cheap and quiet but a long drive from Lyon"),
        ],
        (1, 2),
    ),
    (
        "sven",
        ("{name} came by and quoted {detail}.", "I've added {name}'s quote to the renovation budget."),
        "How much did {name} quote for the electrics?",
        [
            ("Jonas", "96,000 NOK to rewire the whole barn, starting in April"),
            ("Jon", "74,000 NOK to rewire the house but not the barn"),
            ("Johan", "112,000 NOK for everything including a new fuse board"),
            ("Jonny", "a day rate of 9,500 NOK, no fixed price"),
        ],
        (0, 1),
    ),
    (
        "sven",
        ("The cabin in {name}: {detail}.", "Saved the {name} cabin to the holiday list."),
        "What was the cabin in {name} like?",
        [
            ("Voss", "sleeps six, sauna, ski bus from the door, 14,000 NOK for the week"),
            ("Vik", "right on the fjord, tiny but dogs allowed"),
            ("Vinje", "remote, no road in winter, you ski the last two kilometres"),
            ("Vikersund", "next to the ski jump, noisy during competitions"),
        ],
        (0, 2),
    ),
    (
        "aiko",
        ("Feedback from Dr {name}: {detail}.", "I've put Dr {name}'s feedback into your revision list."),
        "What feedback did Dr {name} give?",
        [
            ("Okafor", "the literature review is too long and the method section too short"),
            ("Okonkwo", "the corpus is fine but the annotation scheme needs a reliability check"),
            ("Okoro", "chapter two repeats chapter one, merge them"),
            ("Okafo", "good progress, submit the conference abstract by Friday"),
        ],
        (1, 2),
    ),
    (
        "aiko",
        ("About the conference in {name}: {detail}.", "Added the {name} conference tasks to your list."),
        "What do I need to do for the conference in {name}?",
        [
            ("Kyoto", "the slides are due a week early and the talk is twenty minutes"),
            ("Kobe", "book the dormitory before the 1st or it fills up"),
            ("Kochi", "the poster must be A0 portrait and printed before you fly"),
            ("Koriyama", "they need the full paper, not just the abstract, by the 15th"),
        ],
        (0, 2),
    ),
    (
        "ruth",
        ("{name} rang this morning: {detail}.", "I'll remind you to ring {name} back this evening."),
        "What did {name} ring about?",
        [
            ("Maureen", "her hip operation is booked for the 12th and she needs a lift"),
            ("Marian", "the book club is moving to the café on Burton Road"),
            ("Maria", "she found the recipe for the lemon drizzle you asked about"),
            ("Marianne", "she can't make the coach trip, her grandson is ill"),
        ],
        (0, 3),
    ),
    (
        "ruth",
        ("The coach trip to {name} is on {detail}.", "Put the {name} trip in your diary."),
        "When is the coach trip to {name}?",
        [
            ("Harrogate", "Tuesday the 9th, leaving Didsbury at half eight"),
            ("Haworth", "the last Saturday of the month, with lunch at the parsonage"),
            ("Hexham", "a weekend in June, two nights with breakfast"),
            ("Helmsley", "Thursday the 21st, back by six"),
        ],
        (1, 2),
    ),
    (
        "ruth",
        ("Dr {name} said {detail}.", "I've noted what Dr {name} said."),
        "What did Dr {name} tell me?",
        [
            ("Patel", "the knee X-ray looks fine and physio should help"),
            ("Pateman", "my cholesterol is a bit high, cut down on cheese"),
            ("Pal", "the hearing test shows mild loss in the left ear"),
            ("Patil", "the rash is eczema and the cream should clear it"),
        ],
        (0, 3),
    ),
]

# Identifier groups: (kind, tenant, [id x 4, the first is the original and the rest are near misses
# of it], [what each id is about x 4], indexes asked about). Memory and question templates per kind
# are in make_recall_quality.py.
IDENTIFIERS = [
    (
        "ticket",
        "dana",
        ["OPS-4471", "OPS-4741", "OPS-4417", "OPS-4472"],
        [
            "the payment webhook times out for EU merchants",
            "the staging VPN certificate expired",
            "the nightly backup job skips the ledger database",
            "Grafana fires two alerts for every page",
        ],
        (0, 1),
    ),
    (
        "ticket",
        "dana",
        ["PAY-1093", "PAY-1039", "PAY-1903", "PAY-1098"],
        [
            "refunds over £10,000 need a second approval",
            "the currency rounding is off by a penny on yen",
            "the settlement report is missing Sunday's batch",
            "card tokens are logged in plain text in one service",
        ],
        (0, 3),
    ),
    (
        "ticket",
        "dana",
        ["INC-20519", "INC-20591", "INC-25019", "INC-2051"],
        [
            "the checkout outage on Black Friday",
            "DNS failover took eleven minutes instead of one",
            "a bad config push took down the EU cluster",
            "the status page showed green during the outage",
        ],
        (1, 2),
    ),
    (
        "ticket",
        "marco",
        ["SUP-88213", "SUP-88231", "SUP-82813", "SUP-88218"],
        [
            "the roaster's thermocouple reads twenty degrees low",
            "the afterburner won't light on cold mornings",
            "the drum bearing is squealing",
            "the cooling tray motor trips the fuse",
        ],
        (0, 2),
    ),
    (
        "invoice",
        "marco",
        ["INV-20931", "INV-29031", "INV-20913", "INV-20937"],
        [
            ("Falcon Specialty", "60 kg of Colombian green coffee", "£612.00"),
            ("Pack-It Bristol", "2,000 valve bags", "£284.40"),
            ("Bristol Water", "the unit's water for the quarter", "£96.15"),
            ("Falcon Specialty", "the shipping on the Ethiopian lot", "£75.00"),
        ],
        (0, 1),
    ),
    (
        "invoice",
        "marco",
        ["INV-31174", "INV-31147", "INV-31714", "INV-3174"],
        [
            ("Café Kino", "48 bags of house espresso", "£403.20"),
            ("The Bakehouse", "a wholesale trial order", "£88.00"),
            ("Café Kino", "a grinder service call", "£120.00"),
            ("Small Bar", "12 kg of filter coffee", "£198.00"),
        ],
        (0, 3),
    ),
    (
        "invoice",
        "sven",
        ["F-2025-0412", "F-2025-0421", "F-2025-4012", "F-2024-0412"],
        [
            ("Bergen Tak AS", "the roof on the west side", "184,000 NOK"),
            ("Elektro Vest", "the first half of the rewiring", "48,000 NOK"),
            ("Byggmakker", "timber and insulation", "37,650 NOK"),
            ("Bergen Tak AS", "a roof inspection last year", "4,500 NOK"),
        ],
        (0, 2),
    ),
    (
        "order",
        "leila",
        ["404-7731952-1180", "404-7739152-1180", "404-7731952-1108", "404-7713952-1180"],
        ["two booster seats for the twins", "a drawing lamp for the studio", "a birthday Lego set for Nour", "a new router"],
        (0, 1),
    ),
    (
        "order",
        "ruth",
        ["W1048862", "W1048826", "W1084862", "W1048863"],
        ["the bird feeder with the squirrel guard", "a large-print crossword book", "the raised vegetable bed kit", "slippers for Jack"],
        (0, 3),
    ),
    (
        "order",
        "sven",
        ["SO-559031", "SO-559013", "SO-595031", "SO-559081"],
        ["the heat pump's outdoor unit", "forty sacks of mortar", "a chainsaw chain and files", "the bathroom tiles"],
        (1, 2),
    ),
    (
        "order",
        "marco",
        ["#10482", "#10428", "#14082", "#10483"],
        ["Café Kino's weekly espresso", "the farm shop's retail bags", "a one-off gift box order", "the university café's decaf"],
        (0, 2),
    ),
    (
        "email",
        "dana",
        ["priya.raman@northwind.io", "priya.rahman@northwind.io", "p.raman@northwind.io", "priya.raman@northwind.co"],
        ["the Q3 capacity review", "the contract for the new load balancer", "the on-call pay proposal", "the incident report draft"],
        (0, 1),
    ),
    (
        "email",
        "aiko",
        ["k.mclean@ed.ac.uk", "k.maclean@ed.ac.uk", "k.mclean@ed.ac.jp", "c.mclean@ed.ac.uk"],
        [
            "the draft of chapter two",
            "the ethics form for the interviews",
            "the translation invoice for March",
            "the reading group schedule",
        ],
        (0, 1),
    ),
    (
        "email",
        "leila",
        ["contact@atelier-roux.fr", "contact@atelier-roussel.fr", "contacts@atelier-roux.fr", "contact@atelierroux.fr"],
        ["the revised floor plans", "the fee proposal for the façade study", "the site photos from Tuesday", "the signed contract"],
        (0, 2),
    ),
    (
        "email",
        "ruth",
        ["maureen.hollis@btinternet.com", "maureen.hollins@btinternet.com", "moreen.hollis@btinternet.com", "maureen.hollis@gmail.com"],
        [
            "the photos from the Haworth trip",
            "the minutes of the book club meeting",
            "the lemon drizzle recipe",
            "the coach trip booking form",
        ],
        (0, 1),
    ),
    (
        "version",
        "dana",
        ["payments-api 2.14.3", "payments-api 2.13.4", "payments-api 2.14.30", "payments-api 2.41.3"],
        ["fixes the duplicate refund bug", "adds the new fraud score header", "switches the database driver", "drops support for TLS 1.1"],
        (0, 1),
    ),
    (
        "version",
        "dana",
        ["Kubernetes 1.29.4", "Kubernetes 1.24.9", "Kubernetes 1.29.14", "Kubernetes 1.92.4"],
        [
            "is what the staging cluster runs now",
            "is the old production version we must leave by June",
            "is the patch release the vendor recommends",
            "was a typo in the upgrade plan, there is no such release",
        ],
        (0, 2),
    ),
    (
        "version",
        "aiko",
        ["MeCab 0.996.2", "MeCab 0.969.2", "MeCab 0.996.12", "MeCab 0.99.6"],
        [
            "is the build that reads the UniDic dictionary correctly",
            "crashes on files with Windows line endings",
            "is what the lab server has installed",
            "is the version in the old tutorial that no longer compiles",
        ],
        (0, 3),
    ),
    (
        "url",
        "dana",
        [
            "https://grafana.payflow.io/d/8812/payments",
            "https://grafana.payflow.io/d/8821/payments",
            "https://grafana.payflow.io/d/8812/payouts",
            "https://grafana.payflow.io/d/8182/payments",
        ],
        [
            "the dashboard for card payment latency",
            "the dashboard for bank transfer errors",
            "the payouts backlog dashboard",
            "last year's dashboard nobody maintains",
        ],
        (0, 1),
    ),
    (
        "url",
        "leila",
        [
            "https://www.airbnb.fr/rooms/53120947",
            "https://www.airbnb.fr/rooms/53129047",
            "https://www.airbnb.fr/rooms/5312094",
            "https://www.airbnb.fr/rooms/53120974",
        ],
        [
            "the flat in Annecy with the lake view",
            "the house near Arles with the big garden",
            "the studio in Antibes near the market",
            "the chalet in Chamonix for February",
        ],
        (0, 2),
    ),
    (
        "url",
        "aiko",
        [
            "https://doi.org/10.1075/jpl.21014.tan",
            "https://doi.org/10.1075/jpl.21041.tan",
            "https://doi.org/10.1075/jpl.21014.tam",
            "https://doi.org/10.1075/jpl.12014.tan",
        ],
        [
            "the paper on Kansai particles you must cite",
            "a review of politeness markers, optional reading",
            "the corpus paper by Tamura",
            "an older paper that was retracted",
        ],
        (0, 1),
    ),
]

# Cross-tenant near-copies: (question, (input, output) with slots, {tenant: slot values}); the first
# tenant holds the target and the others near-copies of it under the same episode id, which a
# search in the first tenant must never return.
CROSS_TENANT = [
    (
        "When does my passport run out?",
        ("My passport expires on {date}, I need it renewed before the {place} trip.", "I'll remind you three months before {date}."),
        {
            "dana": {"date": "14 May 2026", "place": "Toronto"},
            "leila": {"date": "14 March 2026", "place": "Lisbon"},
            "sven": {"date": "2 May 2026", "place": "Iceland"},
        },
    ),
    (
        "What's the wifi password at home?",
        ("The home wifi password is {pw}, the router is in the {spot}.", "Saved it; I won't show it unless you ask."),
        {
            "marco": {"pw": "RoastyToasty#21", "spot": "hallway cupboard"},
            "ruth": {"pw": "RoastyToasty#12", "spot": "hallway cupboard"},
            "aiko": {"pw": "RoastyT0asty#21", "spot": "hall cupboard"},
        },
    ),
    (
        "What number do I ring if a card payment looks wrong?",
        ("My bank's fraud line is {phone}, call it if a card payment looks off.", "Saved {phone} as your fraud line."),
        {"leila": {"phone": "+33 4 72 10 55 80"}, "dana": {"phone": "+44 113 496 0180"}, "marco": {"phone": "+44 117 496 0810"}},
    ),
    (
        "Who has the spare house key?",
        ("The spare key is with {who} at number {n}.", "Noted: spare key at number {n}."),
        {"sven": {"who": "Astrid", "n": "14"}, "ruth": {"who": "Astrid", "n": "41"}, "dana": {"who": "Astrid", "n": "12"}},
    ),
    (
        "What blood group am I?",
        ("My blood type is {type}, it's on my donor card.", "Noted: {type}."),
        {"aiko": {"type": "A positive"}, "leila": {"type": "A negative"}, "sven": {"type": "AB positive"}},
    ),
    (
        "When is my car insurance due for renewal?",
        ("Car insurance renews on {date} with {insurer}, policy {policy}.", "I'll remind you a month before to compare quotes."),
        {
            "ruth": {"date": "3 October", "insurer": "Saga", "policy": "MC-5531902"},
            "marco": {"date": "3 November", "insurer": "Saga", "policy": "MC-5539102"},
            "sven": {"date": "13 October", "insurer": "Gjensidige", "policy": "MC-5531920"},
        },
    ),
    (
        "What size shoes do I wear?",
        ("My shoe size is {size} EU, for running shoes go half a size up.", "Noted: {size}, half a size up for running."),
        {"dana": {"size": "39"}, "aiko": {"size": "38"}, "leila": {"size": "39.5"}},
    ),
    (
        "How much is my gym membership?",
        ("Gym membership at {gym} costs {amount} a month, cancel with 30 days' notice.", "Noted the price and the notice period."),
        {
            "marco": {"gym": "PureGym Bristol", "amount": "£24.99"},
            "dana": {"gym": "PureGym Leeds", "amount": "£21.99"},
            "aiko": {"gym": "PureGym Edinburgh", "amount": "£24.99"},
        },
    ),
    (
        "When is our wedding anniversary?",
        ("Our anniversary is on {date}, we got married in {place}.", "I'll remind you a week before {date}."),
        {
            "leila": {"date": "12 June", "place": "Beirut"},
            "ruth": {"date": "21 June", "place": "Salford"},
            "sven": {"date": "12 July", "place": "Bergen"},
        },
    ),
    (
        "Who is my emergency contact?",
        ("Emergency contact: {name}, my {relation}, {phone}.", "Saved {name} as your emergency contact."),
        {
            "ruth": {"name": "Claire Abara", "relation": "daughter", "phone": "07700 900412"},
            "aiko": {"name": "Claire Abara", "relation": "flatmate", "phone": "07700 900421"},
            "marco": {"name": "Claire Abara", "relation": "sister", "phone": "07700 900142"},
        },
    ),
    (
        "What's my parking permit number?",
        ("Parking permit number {permit}, it has to be renewed every {month}.", "Saved the permit number; I'll remind you in {month}."),
        {
            "dana": {"permit": "LDS-77104", "month": "September"},
            "marco": {"permit": "LDS-77140", "month": "September"},
            "ruth": {"permit": "MCR-77104", "month": "March"},
        },
    ),
    (
        "What's my air miles number?",
        ("My frequent flyer number with {airline} is {number}.", "Saved it for your next booking."),
        {
            "aiko": {"airline": "JAL", "number": "402 118 779"},
            "dana": {"airline": "JAL", "number": "402 181 779"},
            "leila": {"airline": "Air France", "number": "402 118 797"},
        },
    ),
    (
        "Which doctor's practice am I registered with?",
        ("My GP surgery is {name} on {street}, appointments open at 8.", "Noted. I'll remind you to ring at 8 when you need one."),
        {
            "ruth": {"name": "Barlow Medical Centre", "street": "Wilmslow Road"},
            "marco": {"name": "Barlow Medical Centre", "street": "Gloucester Road"},
            "aiko": {"name": "Bruntsfield Medical Practice", "street": "Whitehouse Loan"},
        },
    ),
    (
        "What's the combination for my locker at the swimming pool?",
        ("The locker code at the pool is {code}.", "Saved, I'll keep it private."),
        {"leila": {"code": "4817"}, "sven": {"code": "4871"}, "ruth": {"code": "8417"}},
    ),
    (
        "When did the boiler last get a service?",
        ("The boiler was last serviced on {date} by {company}.", "I'll remind you when the next service is due."),
        {
            "sven": {"date": "4 November 2025", "company": "Varme Service"},
            "dana": {"date": "14 November 2025", "company": "Leeds Heating"},
            "ruth": {"date": "4 November 2024", "company": "British Gas"},
        },
    ),
    (
        "What's the code for my bike lock?",
        ("The bike lock code is {code}, the lock is the {colour} one.", "Saved, only shown when you ask."),
        {
            "dana": {"code": "3902", "colour": "orange"},
            "aiko": {"code": "3092", "colour": "orange"},
            "sven": {"code": "9302", "colour": "black"},
        },
    ),
    (
        "Where do I pick up my repeat prescriptions?",
        ("Repeat prescriptions go to {name}, they text me when it's ready.", "Noted, {name} for prescriptions."),
        {
            "aiko": {"name": "Boots on Nicolson Street"},
            "ruth": {"name": "Boots on Wilmslow Road"},
            "leila": {"name": "the pharmacy on Rue Paul Bert"},
        },
    ),
    (
        "Where does my book club meet?",
        ("Book club meets at {place} on the first {day} of the month.", "I'll put the book club in your calendar."),
        {
            "marco": {"place": "the Old Market Tavern", "day": "Wednesday"},
            "ruth": {"place": "the Old Market Tavern", "day": "Tuesday"},
            "leila": {"place": "the library in the 4th", "day": "Wednesday"},
        },
    ),
    (
        "What's my locker number at work?",
        ("My locker at work is number {n}, the key is on the blue ring.", "Noted: locker {n}."),
        {"sven": {"n": "118"}, "marco": {"n": "181"}, "leila": {"n": "811"}},
    ),
    (
        "Which seat do I like on the train?",
        ("On trains I always want a {seat} seat facing forwards, in the quiet coach.", "Noted for future bookings."),
        {"dana": {"seat": "window"}, "leila": {"seat": "aisle"}, "aiko": {"seat": "table"}},
    ),
]
