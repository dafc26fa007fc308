package lludp

import "sync"

//go:generate go run ./internal/gentemplate -o template_gen.go ../../shared/testdata/real/templates/message_template.msg

var builtin = sync.OnceValue(func() *Template {
	t, err := NewTemplate(builtinVersion, builtinMessages())
	if err != nil {
		panic("lludp BUG: built-in template does not index: " + err.Error())
	}
	return t
})

// Builtin returns the template compiled into the binary: the current
// official Second Life template, 483 messages (protocol.md §5.1).
func Builtin() *Template { return builtin() }
