package definitions_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// imlUndefined is IML's undefined: a field that evaluates to it is left out
// of the request.
type imlUndefined struct{}

// evalIML evaluates a Make IML template as Make would for the few forms the
// generated files use: a whole "{{expression}}" with paths (parameters.x,
// body.result.y), string literals, true/false/undefined, and the functions
// ifempty, if, toBinary (base64), omit and encodeURL; text around
// {{...}} is joined as a string. Enough to send what Make sends and read
// what a module outputs; anything else fails the test.
func evalIML(t *testing.T, tmpl string, ctx map[string]any) any {
	t.Helper()
	if !strings.Contains(tmpl, "{{") {
		return tmpl
	}
	if strings.HasPrefix(tmpl, "{{") && strings.HasSuffix(tmpl, "}}") && strings.Count(tmpl, "{{") == 1 {
		return imlExpr(t, strings.TrimSpace(tmpl[2:len(tmpl)-2]), ctx)
	}
	var out strings.Builder
	for rest := tmpl; rest != ""; {
		i := strings.Index(rest, "{{")
		if i < 0 {
			out.WriteString(rest)
			break
		}
		j := strings.Index(rest, "}}")
		out.WriteString(rest[:i])
		if v := imlExpr(t, rest[i+2:j], ctx); v != (imlUndefined{}) {
			fmt.Fprint(&out, v)
		}
		rest = rest[j+2:]
	}
	return out.String()
}

func imlExpr(t *testing.T, e string, ctx map[string]any) any {
	t.Helper()
	e = strings.TrimSpace(e)
	switch {
	case e == "undefined":
		return imlUndefined{}
	case e == "true" || e == "false":
		return e == "true"
	case strings.HasPrefix(e, `"`) && strings.HasSuffix(e, `"`):
		return e[1 : len(e)-1]
	}
	open := strings.IndexByte(e, '(')
	if open < 0 {
		var v any = ctx
		for _, part := range strings.Split(e, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				return imlUndefined{}
			}
			if v, ok = m[part]; !ok {
				return imlUndefined{}
			}
		}
		return v
	}
	name, args := e[:open], imlArgs(e[open+1:len(e)-1])
	arg := func(i int) any { return imlExpr(t, args[i], ctx) }
	switch name {
	case "ifempty":
		if v := arg(0); !imlEmpty(v) {
			return v
		}
		return arg(1)
	case "if":
		if v := arg(0); !imlEmpty(v) && v != false {
			return arg(1)
		}
		return arg(2)
	case "toBinary":
		if enc := arg(1); enc != "base64" {
			t.Fatalf("toBinary with encoding %v: not modelled", enc)
		}
		s, _ := arg(0).(string)
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("toBinary: %v", err)
		}
		return b
	case "omit":
		m, _ := arg(0).(map[string]any)
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 1; i < len(args); i++ {
			delete(out, fmt.Sprint(arg(i)))
		}
		return out
	case "encodeURL":
		return url.PathEscape(fmt.Sprint(arg(0)))
	}
	t.Fatalf("IML function %s is not modelled by this test", name)
	return nil
}

// imlArgs splits a function's arguments on the semicolons outside nested
// calls and string literals.
func imlArgs(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ';' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func imlEmpty(v any) bool {
	switch v := v.(type) {
	case imlUndefined, nil:
		return true
	case string:
		return v == ""
	case []byte:
		return len(v) == 0
	}
	return false
}
