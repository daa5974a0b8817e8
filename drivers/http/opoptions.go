package http

// opOptions are the five options of every operation slot, in slot order (see slots in
// ops.go). The option system has no list-of-struct type, so each slot's fields are
// options of their own, named after the slot: read, readHeaders, readBody, readStatus,
// readCheck; an empty request line leaves the slot unconfigured.
type opOptions struct {
	Read          string `opt:"read" default:"GET /kv/{key}" reach:"target" help:"Driver.Read: request line METHOD URL-template; empty = not configured"`
	ReadHeaders   string `opt:"readHeaders" default:"" help:"read: extra headers, Name: value, separated by | or newlines"`
	ReadBody      string `opt:"readBody" default:"" help:"read: body template (placeholders as in the URL, unescaped)"`
	ReadStatus    string `opt:"readStatus" default:"" help:"read: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	ReadCheck     string `opt:"readCheck" default:"body" help:"read: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Write         string `opt:"write" default:"PUT /kv/{key}" reach:"target" help:"Driver.Write: request line METHOD URL-template; empty = not configured"`
	WriteHeaders  string `opt:"writeHeaders" default:"" help:"write: extra headers, Name: value, separated by | or newlines"`
	WriteBody     string `opt:"writeBody" default:"{value}" help:"write: body template (placeholders as in the URL, unescaped)"`
	WriteStatus   string `opt:"writeStatus" default:"" help:"write: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	WriteCheck    string `opt:"writeCheck" default:"none" help:"write: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Read1         string `opt:"read1" default:"" reach:"target" help:"extra read operation read1: request line METHOD URL-template; empty = not configured"`
	Read1Headers  string `opt:"read1Headers" default:"" help:"read1: extra headers, Name: value, separated by | or newlines"`
	Read1Body     string `opt:"read1Body" default:"" help:"read1: body template (placeholders as in the URL, unescaped)"`
	Read1Status   string `opt:"read1Status" default:"" help:"read1: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Read1Check    string `opt:"read1Check" default:"body" help:"read1: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Read2         string `opt:"read2" default:"" reach:"target" help:"extra read operation read2: request line METHOD URL-template; empty = not configured"`
	Read2Headers  string `opt:"read2Headers" default:"" help:"read2: extra headers, Name: value, separated by | or newlines"`
	Read2Body     string `opt:"read2Body" default:"" help:"read2: body template (placeholders as in the URL, unescaped)"`
	Read2Status   string `opt:"read2Status" default:"" help:"read2: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Read2Check    string `opt:"read2Check" default:"body" help:"read2: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Write1        string `opt:"write1" default:"" reach:"target" help:"extra write operation write1: request line METHOD URL-template; empty = not configured"`
	Write1Headers string `opt:"write1Headers" default:"" help:"write1: extra headers, Name: value, separated by | or newlines"`
	Write1Body    string `opt:"write1Body" default:"{value}" help:"write1: body template (placeholders as in the URL, unescaped)"`
	Write1Status  string `opt:"write1Status" default:"" help:"write1: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Write1Check   string `opt:"write1Check" default:"none" help:"write1: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Write2        string `opt:"write2" default:"" reach:"target" help:"extra write operation write2: request line METHOD URL-template; empty = not configured"`
	Write2Headers string `opt:"write2Headers" default:"" help:"write2: extra headers, Name: value, separated by | or newlines"`
	Write2Body    string `opt:"write2Body" default:"{value}" help:"write2: body template (placeholders as in the URL, unescaped)"`
	Write2Status  string `opt:"write2Status" default:"" help:"write2: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Write2Check   string `opt:"write2Check" default:"none" help:"write2: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Other1        string `opt:"other1" default:"" reach:"target" help:"extra operation other1: request line METHOD URL-template; empty = not configured"`
	Other1Headers string `opt:"other1Headers" default:"" help:"other1: extra headers, Name: value, separated by | or newlines"`
	Other1Body    string `opt:"other1Body" default:"" help:"other1: body template (placeholders as in the URL, unescaped)"`
	Other1Status  string `opt:"other1Status" default:"" help:"other1: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Other1Check   string `opt:"other1Check" default:"none" help:"other1: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Other2        string `opt:"other2" default:"" reach:"target" help:"extra operation other2: request line METHOD URL-template; empty = not configured"`
	Other2Headers string `opt:"other2Headers" default:"" help:"other2: extra headers, Name: value, separated by | or newlines"`
	Other2Body    string `opt:"other2Body" default:"" help:"other2: body template (placeholders as in the URL, unescaped)"`
	Other2Status  string `opt:"other2Status" default:"" help:"other2: status classes over the defaults, e.g. 200-299=ok,409=rejected"`
	Other2Check   string `opt:"other2Check" default:"none" help:"other2: response check: body, none, json:PATH or json:PATH=TEMPLATE"`
	Delete        string `opt:"delete" default:"" reach:"target" help:"operation delete: request line METHOD URL-template that removes the key, e.g. DELETE /kv/{key}; empty = not configured"`
	DeleteHeaders string `opt:"deleteHeaders" default:"" help:"delete: extra headers, Name: value, separated by | or newlines"`
	DeleteBody    string `opt:"deleteBody" default:"" help:"delete: body template (placeholders as in the URL, unescaped)"`
	DeleteStatus  string `opt:"deleteStatus" default:"" help:"delete: status classes over the defaults (404 = miss), e.g. 404=ok,409=rejected"`
	DeleteCheck   string `opt:"deleteCheck" default:"none" help:"delete: response check: none or json:PATH=TEMPLATE"`
}

// raw returns the slots' option values in slot order.
func (o *opOptions) raw() [numSlots]rawOp {
	return [numSlots]rawOp{
		{o.Read, o.ReadHeaders, o.ReadBody, o.ReadStatus, o.ReadCheck},
		{o.Write, o.WriteHeaders, o.WriteBody, o.WriteStatus, o.WriteCheck},
		{o.Read1, o.Read1Headers, o.Read1Body, o.Read1Status, o.Read1Check},
		{o.Read2, o.Read2Headers, o.Read2Body, o.Read2Status, o.Read2Check},
		{o.Write1, o.Write1Headers, o.Write1Body, o.Write1Status, o.Write1Check},
		{o.Write2, o.Write2Headers, o.Write2Body, o.Write2Status, o.Write2Check},
		{o.Other1, o.Other1Headers, o.Other1Body, o.Other1Status, o.Other1Check},
		{o.Other2, o.Other2Headers, o.Other2Body, o.Other2Status, o.Other2Check},
		{o.Delete, o.DeleteHeaders, o.DeleteBody, o.DeleteStatus, o.DeleteCheck},
	}
}
