package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// seedNames returns the demo customers, in id order: people whose work made
// computing possible, spelled as they spelled themselves (a search for
// "GÖDEL" finds Kurt Gödel). The list is fixed so that every run has the same
// data and "Ada Lovelace" is always customer 1.
func seedNames() []string {
	return []string{
		"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra",
		"Donald Knuth", "Barbara Liskov", "John von Neumann", "Claude Shannon",
		"Kurt Gödel", "Emmy Noether", "Alonzo Church", "Charles Babbage",
		"George Boole", "Frances Allen", "Tony Hoare", "Niklaus Wirth",
		"Dennis Ritchie", "Ken Thompson", "John McCarthy", "Margaret Hamilton",
		"Leslie Lamport", "Robert Tarjan", "Shafi Goldwasser", "Radia Perlman",
		"Adele Goldberg", "Alan Kay", "Butler Lampson", "Jean Sammet",
		"John Backus", "Peter Naur", "Robin Milner", "Tim Berners-Lee",
		"Vint Cerf", "Bob Kahn", "Whitfield Diffie", "Martin Hellman",
		"Ron Rivest", "Adi Shamir", "Leonard Adleman", "Sophie Wilson",
		"Karen Spärck Jones", "Frances Spence", "Kathleen Booth", "Hedy Lamarr",
		"Srinivasa Ramanujan", "Emil Post", "Stephen Kleene", "Haskell Curry",
		"Per Martin-Löf", "Edgar Codd", "Jim Gray", "Michael Stonebraker",
		"Fran Bilas", "Betty Holberton", "Kathleen Antonelli", "Marlyn Meltzer",
		"Ruth Teitelbaum", "Evelyn Boyd Granville", "Katherine Johnson", "Dorothy Vaughan",
	}
}

// seedOrders is how many orders the demo data has.
const seedOrders = 400

// seed fills an empty database with the demo data. Everything derives from
// the fixed name list and a random source with a fixed seed, so two runs of
// the same binary produce identical rows.
func seed(ctx context.Context, tx *sql.Tx, d *dialect) error {
	// Customers joined weekly from the start of 2023, at a time of day that
	// varies but repeats exactly; each order was placed within a year of its
	// customer joining.
	start := time.Date(2023, time.January, 2, 9, 0, 0, 0, time.UTC)
	names := seedNames()
	joined := make([]time.Time, len(names))
	for i, name := range names {
		joined[i] = start.AddDate(0, 0, 7*i).Add(time.Duration(i*37%480) * time.Minute)
		if _, err := tx.ExecContext(ctx,
			d.rebind(`INSERT INTO customers (id, name, email, created_at) VALUES (?, ?, ?, ?)`),
			i+1, name, seedEmail(name), joined[i].Format(time.RFC3339),
		); err != nil {
			return fmt.Errorf("seed customer %q: %w", name, err)
		}
	}

	rng := rand.New(rand.NewPCG(2024, 6))
	for i := range seedOrders {
		c := rng.IntN(len(names))
		placed := joined[c].AddDate(0, 0, rng.IntN(365))
		if _, err := tx.ExecContext(ctx,
			d.rebind(`INSERT INTO orders (id, customer_id, amount_cents, status, placed_on) VALUES (?, ?, ?, ?, ?)`),
			i+1, c+1, 500+rng.IntN(100)*250, seedStatus(rng.IntN(20)), placed.Format(time.DateOnly),
		); err != nil {
			return fmt.Errorf("seed order %d: %w", i+1, err)
		}
	}
	return nil
}

// seedEmail turns "Tim Berners-Lee" into "tim.berners-lee@example.com", and
// "Kurt Gödel" into "kurt.godel@example.com": the demo's addresses are ASCII.
func seedEmail(name string) string {
	// Decompose, drop the combining marks (the diaeresis of ö), recompose.
	// None of these steps can fail.
	ascii, _, _ := transform.String(transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC), name)
	return strings.ToLower(strings.ReplaceAll(ascii, " ", ".")) + "@example.com"
}

// seedStatus maps a roll of 0..19 to a plausible mix: most orders are paid.
func seedStatus(roll int) string {
	switch {
	case roll < 13:
		return "paid"
	case roll < 17:
		return "open"
	default:
		return "cancelled"
	}
}
