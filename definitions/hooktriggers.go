package definitions

import (
	"encoding/json"

	"github.com/imgflow/imgflow/catalog"
)

// What every platform's hook triggers share: the body that subscribes one
// (POST /v1/hooks), and input defaults typed as the inputs are.

// typedDefault is a field's default as its type says: a number for
// integer and number fields (the catalog keeps defaults as text), nil
// when it has none.
func typedDefault(f catalog.Field) any {
	if f.Default == "" {
		return nil
	}
	switch f.Type {
	case catalog.FieldInteger, catalog.FieldNumber:
		return json.Number(f.Default)
	}
	return f.Default
}

// hookSubscribeBody is the JSON body that subscribes target to the hook
// trigger op, with each input's value as value(f) renders it (a platform's
// template expression): the fixed event when the trigger has one, else its
// event input.
func hookSubscribeBody(op *catalog.Operation, target any, value func(catalog.Field) any) obj {
	body := obj{"target_url": target}
	if ev := op.FixedHookEvent(); ev != "" {
		body["event"] = ev
	}
	for _, f := range op.Inputs {
		if f.In == "" || f.In == catalog.InBody {
			body[f.Key] = value(f)
		}
	}
	return body
}
