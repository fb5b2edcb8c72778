package cluster

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// topicLog is a generated query log of the kind issue 21 describes: five
// topics of unequal size, most queries wrapped in greetings, sign-offs
// and "asking for a friend" (skewed toward one topic so that it can pass
// for one), with typos, ALL CAPS lines and noise lines that belong to no
// topic. truth[i] is the topic of texts[i], −1 for noise.
type topicLog struct {
	texts []string
	truth []int
	names []string
}

// topicTemplates are the planted topics (issue 21's five, then two more
// for the small-intent logs): each query is one of the topic's sentences
// with its slots filled from the topic's words.
var topicTemplates = []struct {
	name      string
	sentences []string
	slots     map[string][]string
}{
	{"billing", []string{
		"why was my {card} charged twice for the {plan}",
		"I need a refund for the {plan}, the invoice is wrong",
		"how do I get a refund after cancelling the {plan}",
		"the invoice for my {plan} shows the wrong amount",
		"you billed my {card} after I cancelled the {plan}",
		"can I get the receipt for last month's {plan} payment",
		"my {card} was declined when paying the {plan} invoice",
		"the refund for my {plan} never reached my {card}",
	}, map[string][]string{
		"card": {"credit card", "debit card", "card", "paypal account"},
		"plan": {"premium plan", "yearly subscription", "team plan", "renewal", "monthly subscription"},
	}},
	{"login", []string{
		"I can't log in, the password reset {link} never arrives on {device}",
		"my account is locked after too many wrong passwords on {device}",
		"how do I reset my {secret} on {device}",
		"the {secret} is not accepted when I sign in on {device}",
		"the login page on {device} says my username does not exist",
		"the {secret} reset {link} has expired, how do I log in",
		"I lost my authenticator and cannot sign in with my {secret}",
	}, map[string][]string{
		"link":   {"link", "email", "message"},
		"secret": {"password", "two-factor code", "PIN", "passcode"},
		"device": {"my phone", "the new laptop", "the tablet", "the work computer"},
	}},
	{"finance", []string{
		"should I put my savings in an {fund} or pay off my {debt} first",
		"how much of my salary should go into the {fund} each month",
		"is it smart to invest in {fund} shares while I still have a {debt}",
		"what is a good interest rate for a {debt}",
		"how do dividends from an {fund} get taxed",
		"how do I build a retirement portfolio with an {fund}",
		"should I refinance my {debt} now that interest rates dropped",
	}, map[string][]string{
		"fund": {"index fund", "ETF", "pension fund", "bond fund"},
		"debt": {"mortgage", "student loan", "car loan", "credit card debt"},
	}},
	{"fitness", []string{
		"what is a good {workout} routine with {exercise} for building muscle",
		"how many sets of {exercise} should I do in a {workout} workout",
		"my knees hurt after {exercise} in my {workout} workout, what stretches help",
		"is a {workout} workout better in the morning or the evening",
		"how much protein do I need after a {workout} workout",
		"how do I improve my form on {exercise} at the gym",
	}, map[string][]string{
		"workout":  {"strength", "cardio", "HIIT", "leg day", "full body"},
		"exercise": {"squats", "deadlifts", "bench press", "lunges", "pull-ups"},
	}},
	{"travel", []string{
		"what is the baggage allowance on a {trip} to {place}",
		"do I need a visa for a {trip} to {place}",
		"can I change the date of my {trip} to {place} without a fee",
		"which hotels near the airport in {place} are good for a {trip}",
		"my luggage was lost on the {trip} to {place}",
	}, map[string][]string{
		"place": {"Lisbon", "Tokyo", "Mexico City", "the Greek islands", "Cape Town"},
		"trip":  {"flight", "trip", "cruise", "train journey"},
	}},
	// The last two are only in the small-intent logs (smallIntentSizes).
	{"shipping", []string{
		"where is my {parcel}, the tracking number shows no update",
		"the courier left my {parcel} at the wrong address",
		"my {parcel} arrived damaged, can I get a replacement",
		"how long does {speed} delivery take for a {parcel}",
		"can I change the delivery address of my {parcel}",
		"the tracking shows my {parcel} as delivered but it never came",
	}, map[string][]string{
		"parcel": {"package", "parcel", "order", "box of books"},
		"speed":  {"express", "standard", "next-day", "international"},
	}},
	{"cooking", []string{
		"how long should I bake {dish} in the oven",
		"what can I use instead of {ingredient} in {dish}",
		"is there a vegetarian recipe for {dish}",
		"how do I keep {dish} from getting soggy",
		"can I freeze {dish} made with {ingredient}",
	}, map[string][]string{
		"dish":       {"lasagna", "banana bread", "chicken curry", "pizza dough", "apple pie"},
		"ingredient": {"butter", "eggs", "fresh basil", "heavy cream", "yeast"},
	}},
}

var (
	greetings = []string{"hi", "hey", "hello", "hey there", "hello team", "hi team", "hey support", "good morning", "hello there"}
	signoffs  = []string{"thanks", "thanks in advance", "thank you so much", "cheers", "thanks a lot", "many thanks", "thx", "appreciate it", "have a nice day"}
	friend    = []string{"asking for a friend", "just asking for a friend", "asking for a friend lol", "this is for a friend"}
	noise     = []string{
		"asdf", "???", "test", "test test 123", "ok", "lorem ipsum dolor sit amet", "hello?", "qwerty uiop",
		"!!!", "zzz", "...", "aaaaaaa", "1234567890", "hmm", "ping", "lol", "k", "jkjkjk", "foo bar baz", "xyzzy plugh",
	}
)

// newTopicLog generates the log: sizes queries per topic (in the order of
// topicTemplates), then noise lines, shuffled with seed.
func newTopicLog(sizes []int, noiseLines int, seed uint64) topicLog {
	rng := rand.New(rand.NewPCG(seed, 21))
	var l topicLog
	for t, size := range sizes {
		tt := topicTemplates[t]
		l.names = append(l.names, tt.name)
		for range size {
			s := tt.sentences[rng.IntN(len(tt.sentences))]
			for _, k := range slices.Sorted(maps.Keys(tt.slots)) {
				vals := tt.slots[k]
				for strings.Contains(s, "{"+k+"}") {
					s = strings.Replace(s, "{"+k+"}", vals[rng.IntN(len(vals))], 1)
				}
			}
			// "asking for a friend" is on 30 % of lines, most of them of
			// the fitness topic, so it can masquerade as one.
			fr := 0.2
			if tt.name == "fitness" {
				fr = 0.7
			}
			if rng.Float64() < fr {
				if rng.IntN(2) == 0 {
					s = friend[rng.IntN(len(friend))] + ", " + s
				} else {
					s += ", " + friend[rng.IntN(len(friend))]
				}
			}
			if rng.Float64() < 0.6 {
				s = greetings[rng.IntN(len(greetings))] + ", " + s
			}
			if rng.Float64() < 0.4 {
				s += " " + signoffs[rng.IntN(len(signoffs))]
			}
			if rng.Float64() < 0.1 {
				s = typo(s, rng)
			}
			if rng.Float64() < 0.1 {
				s = strings.ToUpper(s)
			}
			l.texts = append(l.texts, s)
			l.truth = append(l.truth, t)
		}
	}
	for i := range noiseLines {
		l.texts = append(l.texts, noise[i%len(noise)])
		l.truth = append(l.truth, -1)
	}
	rng.Shuffle(len(l.texts), func(a, b int) {
		l.texts[a], l.texts[b] = l.texts[b], l.texts[a]
		l.truth[a], l.truth[b] = l.truth[b], l.truth[a]
	})
	return l
}

// typo swaps two adjacent letters of one word of four letters or more.
func typo(s string, rng *rand.Rand) string {
	words := strings.Fields(s)
	for range 10 {
		i := rng.IntN(len(words))
		w := []rune(words[i])
		if len(w) < 4 || !unicode.IsLetter(w[1]) || !unicode.IsLetter(w[2]) {
			continue
		}
		j := 1 + rng.IntN(len(w)-2)
		if !unicode.IsLetter(w[j]) || !unicode.IsLetter(w[j+1]) {
			continue
		}
		w[j], w[j+1] = w[j+1], w[j]
		words[i] = string(w)
		return strings.Join(words, " ")
	}
	return s
}
