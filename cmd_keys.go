package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/system"
)

const keysUsage = `usage:
  imgflow keys create [--paid N]   make an account and print its new key (shown once)
  imgflow keys topup N             add N bought credits to the key's account (stands in for a purchase)
  imgflow keys show                print the key's balance
  imgflow keys set-turns [--weight W] [--limit N]   the key's turns on fair dispatch (keys set-turns --help)

topup and show take the key from $IMGFLOW_API_KEY, else from the first line
of standard input, never from the command line (where ps would show it):
  echo "$KEY" | imgflow keys show
  IMGFLOW_API_KEY=$KEY imgflow keys topup 100

Every subcommand needs --redis or REDIS_URL: the Redis that 'imgflow upstream'
(or 'imgflow dev --redis') uses.`

// keyEnv names the variable topup and show read the key from.
const keyEnv = "IMGFLOW_API_KEY"

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
	if sub == "set-turns" {
		return runKeysSetTurns(ctx, args[1:])
	}
	var redisURL string
	var redisCluster bool
	var paid int
	fs := newFlagSet("keys "+sub, keysUsage)
	addRedisFlags(fs, &redisURL, &redisCluster, "Redis URL of the reference upstream's accounts (required)")
	if sub == "create" {
		fs.Int(&paid, "paid", "", 0, "bought credits to start with (makes the account Paid)")
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	want := map[string]int{"create": 0, "topup": 1, "show": 0}
	n, ok := want[sub]
	if !ok {
		return fmt.Errorf("unknown subcommand %q: use create, topup or show", sub)
	}
	if len(pos) != n {
		if len(pos) == n+1 {
			return fmt.Errorf("keys %s no longer takes the key as an argument (ps would show it): set %s or pipe it on standard input\n\n%s", sub, keyEnv, keysUsage)
		}
		return fmt.Errorf("keys %s takes %d argument(s), got %d\n\n%s", sub, n, len(pos), keysUsage)
	}
	var key string
	if sub != "create" {
		if key, err = readKey(stdin); err != nil {
			return err
		}
	}
	if redisURL == "" {
		return errors.New("REDIS_URL (--redis) is required: with an embedded Redis the account would vanish when this command exits. Point it at the Redis 'imgflow upstream' uses (imgflow upstream without --redis prints a demo key of its own)")
	}
	rdb, _, closeRedis, err := system.OpenRedis(ctx, system.RedisTarget{URL: redisURL, Cluster: redisCluster})
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
		credits, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil || credits <= 0 {
			return fmt.Errorf("credits %q must be a positive whole number", pos[0])
		}
		acct, err := ledger.TopUp(ctx, key, credits)
		if err != nil {
			return keyError(err)
		}
		printAccount(acct)
	case "show":
		acct, err := ledger.Lookup(ctx, key)
		if err != nil {
			return keyError(err)
		}
		printAccount(acct)
	}
	return nil
}

// stdin is where keys are read from; tests replace it.
var stdin io.Reader = os.Stdin

// readKey takes the key from $IMGFLOW_API_KEY, else the first line of r.
func readKey(r io.Reader) (string, error) {
	if k := strings.TrimSpace(os.Getenv(keyEnv)); k != "" {
		return k, nil
	}
	line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	if k := strings.TrimSpace(line); k != "" {
		return k, nil
	}
	return "", fmt.Errorf("no key: set %s or pipe the key on standard input", keyEnv)
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
