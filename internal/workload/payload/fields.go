package payload

import "text/template/parse"

// Field is a field chain a template reads from its data, with where it
// is in the template: {{.Vars.embed.embedding}} reads
// Field{Path: ["Vars", "embed", "embedding"]}.
type Field struct {
	// Path is the chain of field names, from the template's data.
	Path []string
	// Where is the template's name, line and column of the field.
	Where string
}

// Fields lists the field chains t reads from its data: .X.Y and $.X.Y,
// wherever they appear (actions, pipelines of if, with and range, and the
// arguments of functions). It does not follow dot once with or range has
// moved it: {{with .Vars}}{{.x}}{{end}} lists Vars and x, each from its
// own dot, and a caller checking names takes the first as what it is;
// nor fields of a pipeline's value ((.Vars).x lists Vars only).
func (t *Template) Fields() []Field {
	var out []Field
	var node func(n parse.Node)
	pipe := func(p *parse.PipeNode) {
		if p == nil {
			return
		}
		for _, c := range p.Cmds {
			for _, a := range c.Args {
				node(a)
			}
		}
	}
	add := func(n parse.Node, path []string) {
		loc, _ := t.t.ErrorContext(n)
		out = append(out, Field{Path: path, Where: loc})
	}
	node = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				node(c)
			}
		case *parse.ActionNode:
			pipe(n.Pipe)
		case *parse.IfNode:
			pipe(n.Pipe)
			node(n.List)
			node(n.ElseList)
		case *parse.WithNode:
			pipe(n.Pipe)
			node(n.List)
			node(n.ElseList)
		case *parse.RangeNode:
			pipe(n.Pipe)
			node(n.List)
			node(n.ElseList)
		case *parse.PipeNode:
			pipe(n)
		case *parse.FieldNode:
			add(n, n.Ident)
		case *parse.VariableNode:
			if len(n.Ident) > 1 && n.Ident[0] == "$" {
				add(n, n.Ident[1:])
			}
		case *parse.ChainNode:
			if d, ok := n.Node.(*parse.DotNode); ok {
				add(d, n.Field)
			} else {
				node(n.Node)
			}
		}
	}
	node(t.t.Root)
	return out
}
