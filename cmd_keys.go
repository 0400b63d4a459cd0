package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
)

const keysUsage = `usage:
  imgflow keys create [--paid N]   make an account and print its new key (shown once)
  imgflow keys topup KEY N         add N bought credits (stands in for a purchase)
  imgflow keys show KEY            print the account's balance

Every subcommand needs --redis or REDIS_URL: the Redis that 'imgflow upstream'
(or 'imgflow dev --redis') uses.`

// runKeys manages reference-upstream accounts; it stands in for the web
// dashboard the contract mentions.
func runKeys(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(os.Stderr, keysUsage)
		if len(args) == 0 {
			return errors.New("a subcommand is required: create, topup or show")
		}
		return nil
	}
	sub := args[0]
	var redisURL string
	var paid int
	fs := newFlagSet("keys "+sub, keysUsage)
	fs.String(&redisURL, "redis", "REDIS_URL", "", "Redis URL of the reference upstream's accounts (required)")
	if sub == "create" {
		fs.Int(&paid, "paid", "", 0, "bought credits to start with (makes the account Paid)")
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	want := map[string]int{"create": 0, "topup": 2, "show": 1}
	n, ok := want[sub]
	if !ok {
		return fmt.Errorf("unknown subcommand %q: use create, topup or show", sub)
	}
	if len(pos) != n {
		return fmt.Errorf("keys %s takes %d argument(s), got %d\n\n%s", sub, n, len(pos), keysUsage)
	}
	if redisURL == "" {
		return errors.New("REDIS_URL (--redis) is required: with an embedded Redis the account would vanish when this command exits. Point it at the Redis 'imgflow upstream' uses (imgflow upstream without --redis prints a demo key of its own)")
	}
	rdb, _, closeRedis, err := openRedis(ctx, redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	ledger := refupstream.NewLedger(rdb, refupstream.DefaultPrefix, nil)

	switch sub {
	case "create":
		if paid < 0 {
			return fmt.Errorf("--paid %d must not be negative", paid)
		}
		key, acct, err := ledger.CreateAccount(ctx, int64(paid))
		if err != nil {
			return err
		}
		fmt.Printf("api_key: %s\n(shown once: only its hash is stored)\n", key)
		printAccount(acct)
	case "topup":
		credits, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil || credits <= 0 {
			return fmt.Errorf("credits %q must be a positive whole number", pos[1])
		}
		acct, err := ledger.TopUp(ctx, pos[0], credits)
		if err != nil {
			return keyError(err)
		}
		printAccount(acct)
	case "show":
		acct, err := ledger.Lookup(ctx, pos[0])
		if err != nil {
			return keyError(err)
		}
		printAccount(acct)
	}
	return nil
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, and returns the positional ones.
func parseInterleaved(fs *flagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func keyError(err error) error {
	if errors.Is(err, refupstream.ErrUnknownKey) {
		return errors.New("no account holds this key (is REDIS_URL the Redis the upstream uses?)")
	}
	return err
}

func printAccount(a refupstream.Account) {
	fmt.Printf("user_id: %s\nsubscription_type: %s\ncredits_remaining: %d (free this month %d + paid %d)\n",
		a.UserID, a.SubscriptionType, a.CreditsRemaining, a.FreeRemaining, a.Paid)
}
