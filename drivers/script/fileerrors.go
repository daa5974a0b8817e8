package script

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// The file option can name any file the process can read, and its errors reach the API
// and the log. A file that is not a script (a key, a password file, /etc/shadow) fails to
// compile or to run, and the messages of goja's parser, compiler and runtime quote the
// text they stumbled on ("hunter2 is not defined", "Identifier 'x' has already been
// declared"). So until a file has loaded as a script, its errors say what kind of error,
// and where, and quote nothing. Errors of a loaded script (its init, its operations)
// are its author's and are shown whole, as are those of the source option, which is the
// user's own text.

// withheld ends the messages whose text was left out.
const withheld = "(message withheld: the text of a file that has not loaded as a script is never shown)"

// safeSyntax matches the parser's and compiler's messages that quote nothing of the
// text: the unexpected-token family (whose token is a punctuator, a keyword's kind or a
// literal true/false/null) and fixed sentences of letters. It is compiled on first use:
// at package init every ndbench process paid for it, whatever its driver.
var safeSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(Unexpected (identifier|number|string|end of input|reserved word|strict mode reserved word|token (ILLEGAL|true|false|null|[^\sA-Za-z0-9'"` + "`" + `\\]{1,4}))|[A-Za-z][A-Za-z ,-]*\.?)$`)
})

// compileError reports a script that does not compile: whole for the source option, and
// for a file, the position and only a message that quotes nothing of it.
func compileError(src source, err error) error {
	if !src.file {
		return fmt.Errorf("script %s: %w", src.name, err)
	}
	where, msg := src.name, ""
	var cse *goja.CompilerSyntaxError
	var ce *goja.CompilerReferenceError
	switch {
	case errors.As(err, &cse) && cse.File != nil:
		p := cse.File.Position(cse.Offset)
		where, msg = fmt.Sprintf("%s:%d:%d", src.name, p.Line, p.Column), cse.Message
	case errors.As(err, &cse):
		// A parse error: goja keeps only its text; parse again for the structured list.
		_, perr := parser.ParseFile(nil, src.name, src.text, 0)
		var list parser.ErrorList
		if errors.As(perr, &list) && len(list) > 0 {
			p := list[0].Position
			where, msg = fmt.Sprintf("%s:%d:%d", src.name, p.Line, p.Column), list[0].Message
		}
	case errors.As(err, &ce):
		if ce.File != nil {
			p := ce.File.Position(ce.Offset)
			where = fmt.Sprintf("%s:%d:%d", src.name, p.Line, p.Column)
		}
		return fmt.Errorf("script %s: ReferenceError %s", where, withheld)
	}
	if safeSyntax().MatchString(msg) {
		return fmt.Errorf("script %s: SyntaxError: %s", where, msg)
	}
	return fmt.Errorf("script %s: SyntaxError %s", where, withheld)
}

// standardErrors are the names of JavaScript's own error types, which a message may
// name (a thrown object's name is otherwise the file's text).
var standardErrors = map[string]bool{
	"Error": true, "EvalError": true, "RangeError": true, "ReferenceError": true, "SyntaxError": true,
	"TypeError": true, "URIError": true, "AggregateError": true, "NdbenchError": true,
}

// convertTop is convert for the run of the script's top level (before it is known to be
// a script): for a file, an exception is named by its type and position only.
func (v *vm) convertTop(ctx context.Context, err error) error {
	var exc *goja.Exception
	if !v.g.src.file || !errors.As(err, &exc) {
		return v.convert(ctx, err)
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return v.convert(ctx, err)
	}
	name := "an exception"
	if obj, ok := exc.Value().(*goja.Object); ok {
		if n := obj.Get("name"); n != nil && standardErrors[n.String()] {
			name = n.String()
		}
	}
	return fmt.Errorf("script %s: %s %s", v.position(exc), name, withheld)
}
