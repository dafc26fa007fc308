package lludp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Frequency is how a message number is encoded on the wire (protocol.md §2.3).
type Frequency uint8

const (
	High   Frequency = iota // one byte, 1..254
	Medium                  // FF NN
	Low                     // FF FF NNNN (big-endian)
	Fixed                   // FF FF FF Fx: a Low number of 0xFFF0 and above
)

var frequencyNames = [...]string{"High", "Medium", "Low", "Fixed"}

func (f Frequency) String() string {
	if int(f) < len(frequencyNames) {
		return frequencyNames[f]
	}
	return "Frequency(" + strconv.Itoa(int(f)) + ")"
}

// MessageID identifies a message by frequency and number. For Fixed messages
// Number is the template's full 32-bit value (PacketAck is 0xFFFFFFFB); for
// the others it is the number within its frequency.
type MessageID struct {
	Frequency Frequency
	Number    uint32
}

func (id MessageID) String() string {
	if id.Frequency == Fixed {
		return fmt.Sprintf("Fixed 0x%08X", id.Number)
	}
	return fmt.Sprintf("%s %d", id.Frequency, id.Number)
}

// FieldType is a template field type (protocol.md §5.3).
type FieldType uint8

// Field types. Sizes and byte orders are in fieldSizes and doc.go.
const (
	TypeU8 FieldType = iota
	TypeU16
	TypeU32
	TypeU64
	TypeS8
	TypeS16
	TypeS32
	TypeS64
	TypeF32
	TypeF64
	TypeVector3
	TypeVector3d
	TypeVector4
	TypeQuaternion
	TypeUUID
	TypeBool
	TypeIPAddr
	TypeIPPort
	TypeFixed    // Field.Size raw bytes
	TypeVariable // Field.Size (1 or 2) length-prefix bytes, then that many bytes
	numFieldTypes
)

var fieldTypeNames = [numFieldTypes]string{
	"U8", "U16", "U32", "U64", "S8", "S16", "S32", "S64", "F32", "F64",
	"LLVector3", "LLVector3d", "LLVector4", "LLQuaternion", "LLUUID", "BOOL",
	"IPADDR", "IPPORT", "Fixed", "Variable",
}

// fieldSizes is the wire size of each fixed-size type; 0 for Fixed and
// Variable, whose size comes from the template.
var fieldSizes = [numFieldTypes]int{
	1, 2, 4, 8, 1, 2, 4, 8, 4, 8,
	12, 24, 16, 12, 16, 1,
	4, 2, 0, 0,
}

func (t FieldType) String() string {
	if t < numFieldTypes {
		return fieldTypeNames[t]
	}
	return "FieldType(" + strconv.Itoa(int(t)) + ")"
}

// BlockKind says how many instances of a block a message carries.
type BlockKind uint8

const (
	Single   BlockKind = iota // exactly one, no count on the wire
	Multiple                  // exactly Block.Count, no count on the wire
	Variable                  // a U8 count on the wire, 0..255
)

var blockKindNames = [...]string{"Single", "Multiple", "Variable"}

func (k BlockKind) String() string {
	if int(k) < len(blockKindNames) {
		return blockKindNames[k]
	}
	return "BlockKind(" + strconv.Itoa(int(k)) + ")"
}

// Deprecation is the optional deprecation marker of a message.
type Deprecation uint8

const (
	NotDeprecated Deprecation = iota
	Deprecated
	UDPDeprecated
	UDPBlackListed
)

var deprecationNames = [...]string{"NotDeprecated", "Deprecated", "UDPDeprecated", "UDPBlackListed"}

func (d Deprecation) String() string {
	if int(d) < len(deprecationNames) {
		return deprecationNames[d]
	}
	return "Deprecation(" + strconv.Itoa(int(d)) + ")"
}

// Field is one field of a block. Size is the byte count of a Fixed field and
// the length-prefix width (1 or 2) of a Variable field; for every other type
// it is the type's wire size.
type Field struct {
	Name string
	Type FieldType
	Size int
}

// Block is one block of a message. Count is the instance count of a Multiple
// block, 1 for a Single block and 0 for a Variable one. FixedSize is the wire
// size of one instance, or -1 when the block holds a Variable field.
type Block struct {
	Name      string
	Kind      BlockKind
	Count     int
	Fields    []Field
	FixedSize int
}

// FieldIndex returns the index of the named field, or -1.
func (b *Block) FieldIndex(name string) int {
	for i := range b.Fields {
		if b.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Message is one message of a template.
type Message struct {
	Name        string
	ID          MessageID
	Trusted     bool
	Zerocoded   bool
	Deprecation Deprecation
	Blocks      []Block

	category Category  // set by NewTemplate from categoryByMessage
	json     *jsonKeys // set by NewTemplate
}

// BlockIndex returns the index of the named block, or -1.
func (m *Message) BlockIndex(name string) int {
	for i := range m.Blocks {
		if m.Blocks[i].Name == name {
			return i
		}
	}
	return -1
}

// Category is the simulator throttle category of this message (category.go).
func (m *Message) Category() Category { return m.category }

// Template is a parsed message template with lookup tables for decoding.
// It is immutable once built and safe for concurrent use.
type Template struct {
	Version  string
	Messages []Message

	high, medium [256]int32 // index+1 into Messages; 0 means absent
	low          map[uint32]int32
	byName       map[string]int32
}

// NewTemplate indexes msgs. It fails on duplicate names or numbers and on
// numbers that cannot be encoded.
func NewTemplate(version string, msgs []Message) (*Template, error) {
	t := &Template{Version: version, Messages: msgs, low: make(map[uint32]int32), byName: make(map[string]int32, len(msgs))}
	for i := range msgs {
		m := &msgs[i]
		if _, dup := t.byName[m.Name]; dup {
			return nil, fmt.Errorf("message %s: %w", m.Name, errDuplicateMessage)
		}
		t.byName[m.Name] = int32(i + 1)
		m.category = categoryOf(m.Name)
		m.json = newJSONKeys(m)
		var slot *int32
		switch m.ID.Frequency {
		case High, Medium:
			if m.ID.Number < 1 || m.ID.Number > 254 {
				return nil, fmt.Errorf("message %s: number %d: %w", m.Name, m.ID.Number, errBadTemplateNumber)
			}
			if m.ID.Frequency == High {
				slot = &t.high[m.ID.Number]
			} else {
				slot = &t.medium[m.ID.Number]
			}
		case Low, Fixed:
			key := m.ID.Number & 0xFFFF
			if m.ID.Frequency == Low && (m.ID.Number < 1 || m.ID.Number > 0xFFFF) ||
				m.ID.Frequency == Fixed && m.ID.Number>>16 != 0xFFFF {
				return nil, fmt.Errorf("message %s: number %d: %w", m.Name, m.ID.Number, errBadTemplateNumber)
			}
			if _, dup := t.low[key]; dup {
				return nil, fmt.Errorf("message %s: number %v: %w", m.Name, m.ID, errDuplicateMessage)
			}
			t.low[key] = int32(i + 1)
			continue
		}
		if *slot != 0 {
			return nil, fmt.Errorf("message %s: number %v: %w", m.Name, m.ID, errDuplicateMessage)
		}
		*slot = int32(i + 1)
	}
	return t, nil
}

// Lookup returns the message with the given wire identity, or nil. Low and
// Fixed share one number space on the wire, so either frequency finds both.
func (t *Template) Lookup(id MessageID) *Message {
	var i int32
	switch id.Frequency {
	case High:
		if id.Number < 256 {
			i = t.high[id.Number]
		}
	case Medium:
		if id.Number < 256 {
			i = t.medium[id.Number]
		}
	case Low, Fixed:
		if id.Number <= 0xFFFF || id.Number>>16 == 0xFFFF {
			i = t.low[id.Number&0xFFFF]
		}
	}
	if i == 0 {
		return nil
	}
	return &t.Messages[i-1]
}

// ByName returns the named message, or nil.
func (t *Template) ByName(name string) *Message {
	if i := t.byName[name]; i != 0 {
		return &t.Messages[i-1]
	}
	return nil
}

var (
	errDuplicateMessage  = errors.New("duplicate message")
	errBadTemplateNumber = errors.New("message number out of range for its frequency")
	// ErrTemplateSyntax is returned, wrapped with its line, for a malformed template.
	ErrTemplateSyntax = errors.New("template syntax error")
)

// ParseTemplate reads a message_template.msg file (protocol.md §5.2): an
// optional "version" line, then one brace-delimited entry per message with
// nested entries for blocks and fields. Comments start with "//".
func ParseTemplate(r io.Reader) (*Template, error) {
	toks, err := tokenizeTemplate(r)
	if err != nil {
		return nil, err
	}
	p := templateParser{toks: toks}
	version, msgs, err := p.parse()
	if err != nil {
		return nil, err
	}
	return NewTemplate(version, msgs)
}

type templateToken struct {
	text string
	line int
}

func tokenizeTemplate(r io.Reader) ([]templateToken, error) {
	var toks []templateToken
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.Index(text, "//"); i >= 0 {
			text = text[:i]
		}
		text = strings.NewReplacer("{", " { ", "}", " } ").Replace(text)
		for _, f := range strings.Fields(text) {
			toks = append(toks, templateToken{f, line})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	return toks, nil
}

type templateParser struct {
	toks []templateToken
	pos  int
}

func (p *templateParser) errorf(format string, args ...any) error {
	line := 0
	if p.pos < len(p.toks) {
		line = p.toks[p.pos].line
	} else if len(p.toks) > 0 {
		line = p.toks[len(p.toks)-1].line
	}
	return fmt.Errorf("line %d: %s: %w", line, fmt.Sprintf(format, args...), ErrTemplateSyntax)
}

func (p *templateParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].text
	}
	return ""
}

func (p *templateParser) next(what string) (string, error) {
	if p.pos >= len(p.toks) {
		return "", p.errorf("unexpected end of file, want %s", what)
	}
	p.pos++
	return p.toks[p.pos-1].text, nil
}

func (p *templateParser) expect(tok string) error {
	got, err := p.next(strconv.Quote(tok))
	if err != nil {
		return err
	}
	if got != tok {
		p.pos--
		return p.errorf("got %q, want %q", got, tok)
	}
	return nil
}

func (p *templateParser) parse() (string, []Message, error) {
	var version string
	if p.peek() == "version" {
		p.pos++
		v, err := p.next("version number")
		if err != nil {
			return "", nil, err
		}
		version = v
	}
	var msgs []Message
	for p.pos < len(p.toks) {
		m, err := p.message()
		if err != nil {
			return "", nil, err
		}
		msgs = append(msgs, m)
	}
	return version, msgs, nil
}

var frequencyByName = map[string]Frequency{"High": High, "Medium": Medium, "Low": Low, "Fixed": Fixed}

var deprecationByName = map[string]Deprecation{
	"NotDeprecated": NotDeprecated, "Deprecated": Deprecated,
	"UDPDeprecated": UDPDeprecated, "UDPBlackListed": UDPBlackListed,
}

func (p *templateParser) message() (Message, error) {
	var m Message
	if err := p.expect("{"); err != nil {
		return m, err
	}
	var err error
	if m.Name, err = p.next("message name"); err != nil {
		return m, err
	}
	freq, err := p.next("frequency")
	if err != nil {
		return m, err
	}
	f, ok := frequencyByName[freq]
	if !ok {
		p.pos--
		return m, p.errorf("message %s: unknown frequency %q", m.Name, freq)
	}
	num, err := p.next("message number")
	if err != nil {
		return m, err
	}
	n, perr := strconv.ParseUint(num, 0, 32)
	if perr != nil {
		p.pos--
		return m, p.errorf("message %s: bad number %q", m.Name, num)
	}
	m.ID = MessageID{Frequency: f, Number: uint32(n)}
	trust, err := p.next("trust")
	if err != nil {
		return m, err
	}
	switch trust {
	case "Trusted":
		m.Trusted = true
	case "NotTrusted":
	default:
		p.pos--
		return m, p.errorf("message %s: unknown trust %q", m.Name, trust)
	}
	enc, err := p.next("encoding")
	if err != nil {
		return m, err
	}
	switch enc {
	case "Zerocoded":
		m.Zerocoded = true
	case "Unencoded":
	default:
		p.pos--
		return m, p.errorf("message %s: unknown encoding %q", m.Name, enc)
	}
	if d, ok := deprecationByName[p.peek()]; ok {
		m.Deprecation = d
		p.pos++
	}
	for p.peek() == "{" {
		b, err := p.block(m.Name)
		if err != nil {
			return m, err
		}
		m.Blocks = append(m.Blocks, b)
	}
	return m, p.expect("}")
}

func (p *templateParser) block(msg string) (Block, error) {
	var b Block
	p.pos++ // "{"
	var err error
	if b.Name, err = p.next("block name"); err != nil {
		return b, err
	}
	kind, err := p.next("block kind")
	if err != nil {
		return b, err
	}
	switch kind {
	case "Single":
		b.Kind, b.Count = Single, 1
	case "Variable":
		b.Kind = Variable
	case "Multiple":
		b.Kind = Multiple
		cnt, err := p.next("repeat count")
		if err != nil {
			return b, err
		}
		n, perr := strconv.ParseUint(cnt, 0, 8)
		if perr != nil || n == 0 {
			p.pos--
			return b, p.errorf("%s.%s: bad repeat count %q", msg, b.Name, cnt)
		}
		b.Count = int(n)
	default:
		p.pos--
		return b, p.errorf("%s.%s: unknown block kind %q", msg, b.Name, kind)
	}
	for p.peek() == "{" {
		f, err := p.field(msg, b.Name)
		if err != nil {
			return b, err
		}
		b.Fields = append(b.Fields, f)
	}
	b.FixedSize = blockFixedSize(b.Fields)
	return b, p.expect("}")
}

var fieldTypeByName = func() map[string]FieldType {
	m := make(map[string]FieldType, numFieldTypes)
	for t := FieldType(0); t < numFieldTypes; t++ {
		m[fieldTypeNames[t]] = t
	}
	return m
}()

func (p *templateParser) field(msg, block string) (Field, error) {
	var f Field
	p.pos++ // "{"
	var err error
	if f.Name, err = p.next("field name"); err != nil {
		return f, err
	}
	typ, err := p.next("field type")
	if err != nil {
		return f, err
	}
	t, ok := fieldTypeByName[typ]
	if !ok {
		p.pos--
		return f, p.errorf("%s.%s.%s: unknown field type %q", msg, block, f.Name, typ)
	}
	f.Type, f.Size = t, fieldSizes[t]
	if t == TypeFixed || t == TypeVariable {
		sz, err := p.next("field size")
		if err != nil {
			return f, err
		}
		n, perr := strconv.ParseUint(sz, 0, 16)
		if perr != nil || n == 0 || t == TypeVariable && n != 1 && n != 2 {
			p.pos--
			return f, p.errorf("%s.%s.%s: bad size %q for %s", msg, block, f.Name, sz, typ)
		}
		f.Size = int(n)
	}
	return f, p.expect("}")
}

func blockFixedSize(fields []Field) int {
	size := 0
	for _, f := range fields {
		if f.Type == TypeVariable {
			return -1
		}
		size += f.Size
	}
	return size
}
