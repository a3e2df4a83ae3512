"""Hand-written paraphrase cases for the hard recall-quality set (see make_recall_quality.py).

Each case: the question as the user asks it (the agent recalls with the user's words), the
memory that answers it (what the user said, then the reply), and same-topic distractors. The question shares few words with
the answer and several with the distractors, which do not answer it: the shape on which keyword
search, and fusion that trusts it, goes wrong while a paraphrase-aware vector search need not.
"""

# tenant -> [(question, (answer_input, answer_output), [(distractor_input, distractor_output), ...])]
PARAPHRASES = {
    "dana": [
        (
            "Which morning of the week am I always busy with my son?",
            (
                "I can't do anything before 10 on Tuesdays, that's when I take Noah to swimming.",
                "Understood, I'll keep Tuesdays clear until 10.",
            ),
            [
                (
                    "Can the weekly standing sync with the SRE team move to a morning slot?",
                    "I've proposed Wednesday 9:00 for the standing SRE sync.",
                ),
                (
                    "My family is visiting next weekend, so no on-call swaps then please.",
                    "Noted, no on-call swaps next weekend while your family is here.",
                ),
            ],
        ),
        (
            "How do I usually get to the office?",
            (
                "I cycle to work along the canal path most days, it's about 25 minutes.",
                "Nice, I'll check the rain forecast before your commute.",
            ),
            [
                (
                    "The office wifi keeps dropping in the afternoon, can you raise it with facilities?",
                    "I've opened a facilities request about the office wifi.",
                ),
                ("Book me a desk at the office for Thursday near the window.", "Desk 4.12 at the office is booked for Thursday."),
                (
                    "How do I get the office printer to print double-sided?",
                    "Pick 'Print on both sides' in the dialog; the office printer is the HP on floor 4.",
                ),
            ],
        ),
        (
            "What do I hate most in my job?",
            (
                "Honestly the worst thing about this role is being paged at 3am for alerts that fix themselves.",
                "That sounds exhausting. Want me to list the alerts that auto-resolved last month?",
            ),
            [
                (
                    "The job description for the senior SRE role needs a rewrite before we post it.",
                    "I drafted a new job description for the senior SRE role.",
                ),
                (
                    "What does the draining step in the deploy pipeline do?",
                    "It drains connections from the old pods before they are terminated.",
                ),
            ],
        ),
        (
            "Am I making plans to leave the company?",
            (
                "I've had two interviews with a startup in Manchester and I'm seriously considering it.",
                "I'll keep that between us. Do you want help preparing for the final round?",
            ),
            [
                (
                    "The company offsite plans are out: we leave Leeds at 8 on Thursday.",
                    "I've added the offsite coach departure to your calendar.",
                ),
                ("Any plans for the company holiday party yet?", "The party committee mentioned the 19th but nothing is booked."),
            ],
        ),
        (
            "How do I take my coffee?",
            ("Just a flat white with oat milk, no sugar, every single morning.", "Noted: oat flat white, no sugar."),
            [
                ("Can you order more tea bags and coffee pods for the team kitchen?", "Ordered 200 tea bags and 3 boxes of coffee pods."),
                ("What kind of coffee machine should we get for the new floor?", "A bean-to-cup machine around £900 would suit 30 people."),
            ],
        ),
        (
            "Have I been worried about my health lately?",
            (
                "My back has been killing me since I started standing at the desk all day.",
                "Sorry to hear that. Maybe alternate sitting and standing every hour? I can set a reminder.",
            ),
            [
                (
                    "The health checks on the payments service are flapping again.",
                    "I see three failed health checks in the last hour; the pods recovered.",
                ),
                (
                    "Lately the on-call rota has been uneven, is that worrying anyone?",
                    "Two people have done four weeks each lately; I can suggest a fairer rota.",
                ),
            ],
        ),
        (
            "Where am I going on holiday this summer?",
            (
                "We finally booked two weeks in Crete for August, a villa near Chania.",
                "Lovely! I'll block out your calendar for those two weeks.",
            ),
            [
                (
                    "Summer holiday requests need to be in the HR system by the end of the month.",
                    "I'll remind you to submit your summer holiday request next week.",
                ),
                ("Who is going to cover on-call while Priya is on holiday?", "Tomasz volunteered to cover Priya's on-call shifts."),
            ],
        ),
        (
            "What musical instrument do I play?",
            ("Band practice tonight, I'm still terrible at the bass line in the second song.", "Good luck! I'll keep your evening free."),
            [
                ("Which instrument panel on the dashboard shows p99 latency?", "The payments-api dashboard has the p99 latency panel."),
                (
                    "Can you play the recording of yesterday's incident review?",
                    "Here is the recording link for yesterday's incident review.",
                ),
            ],
        ),
    ],
    "marco": [
        (
            "What do I do for a living?",
            (
                "I roast beans in a little unit in Bristol and sell them to cafés around the city.",
                "That sounds wonderful, I'll remember you run a roastery.",
            ),
            [
                (
                    "The living room lights keep flickering, could it be the dimmer?",
                    "Likely the dimmer: LED bulbs often flicker on old dimmers.",
                ),
                ("What does a barista earn in Bristol these days?", "Around £11.50 to £12.50 an hour for an experienced barista."),
            ],
        ),
        (
            "Who looks after my books and taxes?",
            ("My accountant is Gemma Hart, she does the VAT returns every quarter.", "Noted, Gemma Hart handles your VAT returns."),
            [
                (
                    "Can you find me some books about coffee roasting for beginners?",
                    "Three well-reviewed roasting books are in your reading list now.",
                ),
                (
                    "How do taxes work on the van if I use it for deliveries?",
                    "You can claim capital allowances on the business share of the van.",
                ),
            ],
        ),
        (
            "Is my own shop open at weekends?",
            ("We're only trading Monday to Friday now, Saturdays were killing me.", "Understood, I'll update the hours on the website."),
            [
                (
                    "The weekend market at Harbourside wants to know if we're open to a stall.",
                    "I'll reply that you'd consider a stall at the weekend market.",
                ),
                (
                    "Are cafés open on bank holiday weekends usually busier?",
                    "Usually yes, footfall rises about a fifth on bank holiday weekends.",
                ),
            ],
        ),
        (
            "What went wrong with my delivery van?",
            (
                "The Transit's clutch gave out on the M32 and it had to be towed to the garage.",
                "That's a pain. I've asked the garage for a repair estimate.",
            ),
            [
                ("Delivery schedule for next week: Clifton on Tuesday, Stokes Croft on Thursday.", "Saved next week's delivery schedule."),
                (
                    "Can you find out what van insurance would cost for a second driver?",
                    "Adding a second driver to the van insurance would be about £180 a year.",
                ),
            ],
        ),
        (
            "How many people work for me?",
            ("It's just me, Jonah on the roaster three days a week and Alice doing packing.", "Got it, a team of three including you."),
            [
                ("How many bags do we need for the people's market in Bristol?", "Last year you sold about 140 bags at the market."),
                ("Can you work out how many hours I work each week?", "From your calendar, about 58 hours a week lately."),
            ],
        ),
        (
            "Do I have children?",
            (
                "My daughter turns seven next month and wants a unicorn cake.",
                "Adorable, I'll remind you to order the cake two weeks ahead.",
            ),
            [
                (
                    "Children's hot chocolate should go on the menu for the winter.",
                    "Added a children's hot chocolate to the winter menu draft.",
                ),
                ("Does the café on Gloucester Road have a children's corner?", "Yes, it has a small play corner by the window."),
            ],
        ),
        (
            "Where do I buy my green coffee?",
            (
                "I buy nearly all my raw beans from Falcon, their Colombian lots are consistently good.",
                "Noted, Falcon is your main source of unroasted beans.",
            ),
            [
                (
                    "Green coffee prices are up again, what do importers say about the next harvest?",
                    "Importers expect arabica prices to stay high until the Brazilian harvest.",
                ),
                ("Which coffee grinder do baristas prefer for espresso?", "Many prefer the Mythos or the EK43 for espresso."),
            ],
        ),
        (
            "Which football team do I support?",
            (
                "Can't talk Saturday afternoon, Bristol City are playing Leeds at Ashton Gate.",
                "Enjoy the match! I'll hold your messages until after the game.",
            ),
            [
                ("Should we sponsor the local football team's shirts?", "A shirt sponsorship would be about £600 for the season."),
                ("Which team member is covering the market on Saturday?", "Alice is doing the market on Saturday."),
            ],
        ),
    ],
    "leila": [
        (
            "What are my children's names?",
            (
                "The twins, Sami and Nour, both have a fever today so I'm working from home.",
                "Hope the twins feel better soon. I've moved your site visit.",
            ),
            [
                ("How should the new project folder for the school extension be named?", "How about 'Ecole-Vaise-Extension-2026'?"),
                (
                    "Children's menu ideas for the birthday party: pasta, pizza, fruit skewers.",
                    "Saved the children's menu ideas for the party.",
                ),
            ],
        ),
        (
            "What is my profession?",
            (
                "As lead architect on the library extension I finally got planning approval for my drawings.",
                "Congratulations! I'll note the approval date in the project log.",
            ),
            [
                (
                    "For the profession survey, should I tick 'self-employed' or 'employed'?",
                    "Tick self-employed: you invoice clients through your own practice.",
                ),
                (
                    "What is the profession of a site foreman exactly?",
                    "A site foreman runs the daily work on site, supervising trades and safety.",
                ),
            ],
        ),
        (
            "Am I afraid of flying?",
            (
                "I always take the train to Paris, planes make me panic since that bad turbulence.",
                "Understood, I'll look for train routes first.",
            ),
            [
                ("Flying to Lisbon in May, can you check the baggage allowance?", "Your fare includes one 23 kg checked bag."),
                ("Are there any flying lessons for kids around Lyon?", "The aeroclub at Bron runs discovery flights for kids over 10."),
            ],
        ),
        (
            "Which language am I learning?",
            ("Can you quiz me on my Italian verbs again tonight? The conditional is killing me.", "Sure, 20 conditional verbs at 9 pm."),
            [
                ("Which language should the project brochure be in, French or English?", "Both: the client asked for bilingual copies."),
                ("The twins are learning to swim at the municipal pool.", "I've put their swimming lessons in the family calendar."),
            ],
        ),
        (
            "What car do I drive?",
            ("The Renault Zoe needs charging overnight before the site visit tomorrow.", "I'll remind you to plug it in at 9 pm."),
            [
                (
                    "The car seats for the twins are too small now, which ones are good?",
                    "Two well-rated booster seats for four-year-olds are in your basket.",
                ),
                (
                    "The shared drive for the library project is full, can you archive the old renders?",
                    "Moved 3 GB of old renders to the archive drive.",
                ),
            ],
        ),
        (
            "Do I have any medical conditions?",
            (
                "My asthma flares up when the pollen count is high, I need my inhaler with me.",
                "I'll check the pollen forecast each morning.",
            ),
            [
                ("The medical certificate for the twins' swimming club is due on Friday.", "Reminder set to get the medical certificate."),
                (
                    "Are there any conditions in the contract about late delivery?",
                    "Yes: a penalty of 0.1 % of the fee per day after the 30th.",
                ),
            ],
        ),
        (
            "Where did I grow up?",
            ("I spent my whole childhood in Beirut before we moved to France when I was fourteen.", "Thank you for sharing that."),
            [
                ("Can you grow basil on a north-facing balcony?", "It will grow but slowly; basil prefers at least six hours of sun."),
                ("Where did I put the plans for the Croix-Rousse flat?", "They're in the Projects/2025/CroixRousse folder."),
            ],
        ),
        (
            "What do I like to do to relax at the weekend?",
            (
                "Nothing beats an hour of pottery on Sunday morning, it clears my head.",
                "I'll keep your Sunday mornings free for the studio.",
            ),
            [
                (
                    "I'd like to relax the deadline on the façade drawings, can you ask the client?",
                    "I've asked the client whether the façade deadline can move a week.",
                ),
                ("Relax the tolerance on the window frames to 3 mm in the spec.", "Updated the spec: window frame tolerance is 3 mm."),
            ],
        ),
    ],
    "sven": [
        (
            "What pet do I have?",
            (
                "Loki chewed through another lead, can you find a stronger one for a husky?",
                "Here are three chew-resistant leads rated for large dogs.",
            ),
            [
                ("Is pet insurance worth it for an older cat?", "For an older cat premiums rise a lot; a savings pot may be better."),
                ("What paint is safe for a house with pets?", "Water-based, low-VOC paints are safest around pets."),
            ],
        ),
        (
            "Is my roof finished yet?",
            (
                "The roofers wrapped up the west side today, only the chimney flashing left.",
                "Great progress! I'll update the project checklist.",
            ),
            [
                ("Is a roof box for the car worth it for skiing trips?", "A 450-litre roof box fits four pairs of skis."),
                ("Is the quote for the kitchen finished yet?", "The carpenter said the kitchen quote will be ready on Monday."),
            ],
        ),
        (
            "How much is my mortgage?",
            ("We pay the bank 14,200 kroner a month on the house loan.", "Noted: 14,200 NOK monthly."),
            [
                ("Mortgage rates went up again, should we fix now?", "A five-year fix is about 5.1 % now; you could ask for an offer."),
                ("How much is a cord of firewood this winter?", "About 1,900 NOK delivered from the local seller."),
            ],
        ),
        (
            "Is there any food I can't eat?",
            ("Dairy wrecks my stomach, so no cheese or cream in the recipes please.", "Got it, I'll keep recipes lactose-free."),
            [
                ("The food for the dog keeps running out, can we set up a subscription?", "Subscription set: 12 kg every four weeks."),
                ("Do the builders have any food preferences for Friday's lunch?", "Jonas said anything but fish; the others are easy."),
            ],
        ),
        (
            "What car do I own?",
            ("The old Volvo V70 failed its EU inspection on the brakes.", "I'll find a garage that can fix the brakes before the retest."),
            [
                ("Can the car pull the trailer with the old kitchen units?", "Yes, its towing limit is 1,800 kg."),
                ("Do I own a pressure washer or should I hire one?", "You have one in the barn, bought last spring."),
            ],
        ),
        (
            "What am I saving up for?",
            ("Putting 3,000 a month aside so we can afford a new kitchen next spring.", "I'll track the kitchen fund each month."),
            [
                ("Any energy saving tips for an old farmhouse?", "Seal the windows, insulate the loft and add a heat pump."),
                ("Is anything saving us money on the electricity bill this month?", "The bill fell 12 % after the heat pump went in."),
            ],
        ),
        (
            "Do I have any siblings?",
            ("My sister Ingrid is coming over to help paint the barn this weekend.", "Lovely, I'll check the weather for painting."),
            [
                ("Do I have any paint left for the barn doors?", "About four litres of the red, enough for one coat."),
                ("Has the plumber got the parts for the bathroom yet?", "He says the parts arrive on Thursday."),
            ],
        ),
        (
            "What am I scared of?",
            (
                "I don't go up the ladder past the first floor, heights make my legs shake.",
                "Understood, I'll book the roofers for anything up high.",
            ),
            [
                (
                    "Loki is scared of fireworks, what can calm him on New Year's Eve?",
                    "A quiet room, music and a vet-approved calming chew help.",
                ),
                ("What is the scaffolding rental per week?", "About 3,500 NOK a week for the full facade."),
            ],
        ),
    ],
    "aiko": [
        (
            "What is my thesis about?",
            (
                "Chapter three looks at how Osaka speakers use sentence-final particles.",
                "Noted. Want me to track the chapter deadlines too?",
            ),
            [
                ("The thesis formatting rules say 1.5 line spacing and 2.5 cm margins.", "Saved the thesis formatting rules."),
                ("What is the deadline to submit the thesis intention form?", "The intention form is due three months before submission."),
            ],
        ),
        (
            "Where do I live?",
            (
                "My flat in Marchmont is freezing, the radiator in the bedroom doesn't work.",
                "I'll draft an email to your landlord about the radiator.",
            ),
            [
                ("Can we get live captioning set up for the seminar?", "I've asked the department about live captions."),
                ("Where does the linguistics reading group meet this term?", "Room 1.17 in the Dugald Stewart Building, Wednesdays at 4."),
            ],
        ),
        (
            "How do I earn extra money?",
            ("Got another paid manga localisation job on the side, 40 pages due by the 20th.", "Congrats, I've added the due date."),
            [
                ("How much extra does the university pay for tutoring?", "Tutors get £19.20 an hour plus marking time."),
                ("Money for the conference trip: can I claim it back?", "Yes, the school refunds up to £400 with receipts."),
            ],
        ),
        (
            "Do I feel homesick for my family?",
            (
                "I really miss my parents in Sendai, video calls aren't the same.",
                "That sounds hard. Want me to look at flights for the winter break?",
            ),
            [
                (
                    "I feel like my supervisor doesn't read my drafts, how do I raise it?",
                    "Maybe ask for a fixed feedback date at your next meeting.",
                ),
                (
                    "My host family from the exchange year is visiting Edinburgh in June.",
                    "I'll suggest some places to take your host family.",
                ),
            ],
        ),
        (
            "What do I do for exercise?",
            (
                "Climbing at the wall in Ratho twice a week is the only thing keeping me sane.",
                "I'll keep Tuesday and Friday evenings free for climbing.",
            ),
            [
                (
                    "Exercise 4 in the syntax problem set makes no sense to me.",
                    "Exercise 4 asks you to draw the tree for the relative clause.",
                ),
                (
                    "What do I need to do for the ethics exercise in the methods course?",
                    "Write a one-page reflection on consent in fieldwork.",
                ),
            ],
        ),
        (
            "Which software do I use for translations?",
            (
                "Trados keeps crashing when I open big Excel files from the game client.",
                "Try splitting the file; I'll look for a Trados patch.",
            ),
            [
                (
                    "The Japanese translations of the survey need checking before Monday.",
                    "I'll remind you to check the survey translations on Sunday.",
                ),
                ("Which statistics software does the department license, SPSS or R?", "Both: R is free and SPSS is on the lab machines."),
            ],
        ),
        (
            "What is my favourite food?",
            ("Nothing cheers me up like a bowl of my mum's nikujaga, it's the dish I love most.", "That sounds comforting."),
            [
                ("The food at the conference dinner was awful, remind me to eat before next time.", "Noted for the next conference."),
                ("Favourite spots for lunch near George Square?", "Mosque Kitchen and Union of Genius are popular."),
            ],
        ),
        (
            "When does my visa expire?",
            (
                "My student permission runs out at the end of January 2027.",
                "I'll remind you in September to plan the Graduate route application.",
            ),
            [
                ("Visa letter for the Tokyo conference: which address should it go to?", "I'd use your department address."),
                ("When does the funding for the fieldwork expire?", "Your fieldwork grant ends on 31 July."),
            ],
        ),
    ],
    "ruth": [
        (
            "What did I do before I retired?",
            ("I taught geography at a secondary school in Salford for thirty-one years.", "What a career! I'll remember that."),
            [
                ("The retired teachers' association lunch is on the 14th, can you RSVP?", "I've replied yes for the lunch on the 14th."),
                (
                    "Before the retirement party, remind me to buy a card for Maureen.",
                    "Reminder set for a card before Maureen's retirement party.",
                ),
            ],
        ),
        (
            "How many grandchildren do I have?",
            (
                "All four of the little ones are coming for Sunday lunch, from Ellie who's two up to Jack who's eleven.",
                "That'll be a busy Sunday! Shall I find a recipe for eight?",
            ),
            [
                ("Can you help me print the grandchildren's photos from the holiday?", "Send them here and I'll find a print shop."),
                ("How many eggs do I need for a Victoria sponge?", "Four eggs for a two-layer Victoria sponge."),
            ],
        ),
        (
            "Which medication do I take every day?",
            ("I have to remember my blood pressure tablet with breakfast.", "I'll remind you at 8:30 each morning."),
            [
                ("My medication review with the GP is next Tuesday at 10.", "Added to your calendar."),
                ("Which bus goes every day from Didsbury to the Christie?", "The 50 runs every 12 minutes."),
            ],
        ),
        (
            "What do I grow in my garden?",
            (
                "The runner beans and courgettes in the veg patch are going mad this year, I can't give them away fast enough.",
                "Maybe the food bank would take some?",
            ),
            [
                ("The garden centre in Cheadle has 20 % off this weekend.", "Shall I add it to Saturday?"),
                ("What does the council collect in the green garden bin?", "Grass, leaves and hedge trimmings, fortnightly."),
            ],
        ),
        (
            "Do I do any volunteering?",
            ("Thursday mornings I help at the food bank at St Mary's, sorting tins.", "Lovely, I'll keep Thursday mornings free."),
            [
                ("My neighbour Pat started volunteering at the library's homework club.", "That's kind of her."),
                ("Is the neighbour involved in the planning complaint?", "He signed the petition against the extension."),
            ],
        ),
        (
            "Do I have trouble with my eyesight?",
            (
                "I can't read the small print on the bus timetable any more, even with my glasses.",
                "Shall I book you an optician appointment?",
            ),
            [
                ("Trouble with the boiler again, it keeps losing pressure.", "I'll find a Gas Safe engineer near you."),
                ("The school sent an eyesight test letter for the grandkids.", "I'll remind you to pass it on to Claire."),
            ],
        ),
        (
            "What kind of books do I enjoy?",
            (
                "I've finished another Ann Cleeves, I do love a good murder on a Scottish island.",
                "Shall I reserve the next Shetland one at the library?",
            ),
            [
                ("Can you price the books for the church fete at 50p each?", "I'll note 50p a book."),
                ("What kind of flour do I need for bread?", "Strong white bread flour."),
            ],
        ),
        (
            "Am I good with computers?",
            (
                "My grandson set up the tablet but I still get lost when a pop-up appears.",
                "No problem, I'll walk you through it step by step.",
            ),
            [
                ("The computer club at the library is on Wednesdays at 2.", "Shall I put it in your diary?"),
                ("Should I use the old computer for the church newsletter or buy a new one?", "The old one will do for the newsletter."),
            ],
        ),
    ],
}
