// Evaluates ValidatingAdmissionPolicy variables and validations with cel-go, the CEL
// library of the twin's kube-apiserver (with its strings extension: join), for
// cross-checking tests/unit/cel_subset.py. Reads JSON cases on stdin:
// [{"policy": {...}, "object": {...}, "oldObject": {...}, "request": {...}}]; prints, per
// case, the messages of the failed validations ("error: ..." when one cannot be evaluated).
// A variable is evaluated in order and kept as a CEL value; one that fails is left out, so
// an expression reading it fails as it would in the apiserver. Exits 2 when an expression
// does not compile.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

type kase struct {
	Policy    map[string]any `json:"policy"`
	Object    any            `json:"object"`
	OldObject any            `json:"oldObject"`
	Request   map[string]any `json:"request"`
}

func main() {
	var cases []kase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	env, err := cel.NewEnv(ext.Strings(ext.StringsVersion(2)),
		cel.Variable("object", cel.DynType), cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		panic(err)
	}
	var keep bool
	eval := func(expr string, act map[string]any) (any, error) {
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			fmt.Fprintln(os.Stderr, "COMPILE:", iss.Err(), expr)
			os.Exit(2)
		}
		prg, err := env.Program(ast)
		if err != nil {
			return nil, err
		}
		out, _, err := prg.Eval(act)
		if err != nil {
			return nil, err
		}
		if keep {
			return out, nil
		}
		return out.Value(), nil
	}
	var results [][]string
	for _, c := range cases {
		spec := c.Policy["spec"].(map[string]any)
		vars := map[string]any{}
		act := map[string]any{"object": c.Object, "oldObject": c.OldObject, "request": c.Request,
			"namespaceObject": map[string]any{}, "variables": vars}
		if vs, ok := spec["variables"].([]any); ok {
			for _, v := range vs {
				m := v.(map[string]any)
				keep = true
				val, err := eval(m["expression"].(string), act)
				keep = false
				if err == nil {
					vars[m["name"].(string)] = val
				}
			}
		}
		refusals := []string{}
		for _, v := range spec["validations"].([]any) {
			m := v.(map[string]any)
			val, err := eval(m["expression"].(string), act)
			if err != nil {
				refusals = append(refusals, "error: "+err.Error())
				continue
			}
			if val != true {
				msg, _ := m["message"].(string)
				if me, ok := m["messageExpression"].(string); ok {
					out, err := eval(me, act)
					if err != nil {
						msg = "message error: " + err.Error()
					} else {
						msg = fmt.Sprint(out)
					}
				}
				refusals = append(refusals, msg)
			}
		}
		results = append(results, refusals)
	}
	json.NewEncoder(os.Stdout).Encode(results)
}
