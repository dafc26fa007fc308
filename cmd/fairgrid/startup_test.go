package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkProxyArgs runs the proxy's command line from a start-up file (its
// arguments after the binary) with --check-config, as the proxy would
// start at login with the shipped defaults: it must be one the proxy
// takes.
func checkProxyArgs(t *testing.T, file string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "proxy" {
		t.Fatalf("%s runs %q, want fairgrid proxy", file, args)
	}
	if code, out, errOut := runCmd(t, "", append(args, "--check-config")...); code != exitOK || out != "configuration ok\n" {
		t.Errorf("%s: fairgrid %v --check-config: exit %d, %q %q", file, args, code, out, errOut)
	}
}

// TestProxyAtLoginWindows: configs/fairgrid-proxy-task.xml is a Task
// Scheduler definition (schtasks /Create /XML) that starts, at the
// user's logon and without elevation, fairgrid.exe with a command line
// the proxy takes, with no time limit, restarting it if it fails.
func TestProxyAtLoginWindows(t *testing.T) {
	raw, err := os.ReadFile("../../configs/fairgrid-proxy-task.xml")
	if err != nil {
		t.Fatal(err)
	}
	var task struct {
		XMLName  xml.Name `xml:"http://schemas.microsoft.com/windows/2004/02/mit/task Task"`
		Triggers struct {
			Logon *struct {
				Enabled bool
			} `xml:"LogonTrigger"`
		}
		Principals struct {
			Principal struct {
				LogonType, RunLevel string
			}
		}
		Settings struct {
			ExecutionTimeLimit, MultipleInstancesPolicy string
			DisallowStartIfOnBatteries                  bool
			RestartOnFailure                            struct{ Count int }
		}
		Actions struct {
			Exec []struct{ Command, Arguments string }
		}
	}
	if err := xml.Unmarshal(raw, &task); err != nil {
		t.Fatalf("fairgrid-proxy-task.xml: %v", err)
	}
	for i, b := range raw {
		if b >= 0x80 {
			t.Fatalf("fairgrid-proxy-task.xml: byte %d is not ASCII: schtasks reads it in the encoding it declares, and ASCII reads the same in all", i)
		}
	}
	if task.Triggers.Logon == nil || !task.Triggers.Logon.Enabled {
		t.Error("no enabled logon trigger")
	}
	if p := task.Principals.Principal; p.LogonType != "InteractiveToken" || p.RunLevel != "LeastPrivilege" {
		t.Errorf("principal %+v: want the user's own session, not elevated", p)
	}
	if s := task.Settings; s.ExecutionTimeLimit != "PT0S" || s.MultipleInstancesPolicy != "IgnoreNew" || s.DisallowStartIfOnBatteries || s.RestartOnFailure.Count == 0 {
		t.Errorf("settings %+v: want no time limit, one instance, on batteries too, restarts", s)
	}
	if len(task.Actions.Exec) != 1 {
		t.Fatalf("%d actions, want one", len(task.Actions.Exec))
	}
	exec := task.Actions.Exec[0]
	if !strings.HasSuffix(exec.Command, `\fairgrid.exe`) {
		t.Errorf("command %q, want fairgrid.exe", exec.Command)
	}
	checkProxyArgs(t, "fairgrid-proxy-task.xml", strings.Fields(exec.Arguments))
}

// TestProxyAtLoginMacOS: configs/fairgrid-proxy.plist is a launchd agent
// (a property list) that runs fairgrid with a command line the proxy
// takes, at load (login), again if it fails but not once stopped.
func TestProxyAtLoginMacOS(t *testing.T) {
	raw, err := os.ReadFile("../../configs/fairgrid-proxy.plist")
	if err != nil {
		t.Fatal(err)
	}
	plist, err := parsePlistDict(raw)
	if err != nil {
		t.Fatalf("fairgrid-proxy.plist: %v", err)
	}
	if plist["Label"] != "org.fairgrid.proxy" || plist["RunAtLoad"] != true || plist["ProcessType"] != "Background" {
		t.Errorf("Label %v, RunAtLoad %v, ProcessType %v", plist["Label"], plist["RunAtLoad"], plist["ProcessType"])
	}
	if keep, ok := plist["KeepAlive"].(map[string]any); !ok || keep["SuccessfulExit"] != false {
		t.Errorf("KeepAlive %v: want a restart after a failure only", plist["KeepAlive"])
	}
	args, _ := plist["ProgramArguments"].([]any)
	var argv []string
	for _, a := range args {
		s, _ := a.(string)
		argv = append(argv, s)
	}
	if len(argv) < 2 || filepath.Base(argv[0]) != "fairgrid" || !filepath.IsAbs(argv[0]) {
		t.Fatalf("ProgramArguments %q: want the fairgrid binary's absolute path first", argv)
	}
	checkProxyArgs(t, "fairgrid-proxy.plist", argv[1:])
}

// parsePlistDict reads an XML property list whose root is a dict: strings,
// booleans, arrays and dicts (what a launchd agent uses).
func parsePlistDict(raw []byte) (map[string]any, error) {
	var doc struct {
		Dict plistValue `xml:"dict"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	v, err := doc.Dict.value("dict")
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// plistValue is one element of a property list, kept as XML to read by
// its tag.
type plistValue struct {
	Inner []byte `xml:",innerxml"`
}

func (p plistValue) value(tag string) (any, error) {
	switch tag {
	case "string":
		var s string
		err := xml.Unmarshal([]byte("<s>"+string(p.Inner)+"</s>"), &s)
		return s, err
	case "true", "false":
		return tag == "true", nil
	case "array", "dict":
		var items struct {
			Items []struct {
				XMLName xml.Name
				plistValue
			} `xml:",any"`
		}
		if err := xml.Unmarshal([]byte("<x>"+string(p.Inner)+"</x>"), &items); err != nil {
			return nil, err
		}
		if tag == "array" {
			var out []any
			for _, it := range items.Items {
				v, err := it.value(it.XMLName.Local)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		}
		out := map[string]any{}
		for i := 0; i+1 < len(items.Items); i += 2 {
			k, v := items.Items[i], items.Items[i+1]
			if k.XMLName.Local != "key" {
				return nil, &xml.SyntaxError{Msg: "dict: " + k.XMLName.Local + " where a key belongs"}
			}
			key, _ := k.value("string")
			val, err := v.value(v.XMLName.Local)
			if err != nil {
				return nil, err
			}
			out[key.(string)] = val
		}
		if len(items.Items)%2 != 0 {
			return nil, &xml.SyntaxError{Msg: "dict: a key without a value"}
		}
		return out, nil
	}
	return nil, &xml.SyntaxError{Msg: "unexpected element " + tag}
}

// TestProxyAtLoginLinux: configs/fairgrid-proxy.service, a systemd user
// unit, runs a command line the proxy takes.
func TestProxyAtLoginLinux(t *testing.T) {
	unit, exec := unitExecStart(t, "../../configs/fairgrid-proxy.service")
	if len(exec) < 2 || !strings.HasSuffix(exec[0], "/fairgrid") || !strings.Contains(string(unit), "WantedBy=default.target") {
		t.Fatalf("ExecStart %v; want fairgrid, wanted by the user's default target", exec)
	}
	checkProxyArgs(t, "fairgrid-proxy.service", exec[1:])
}

// unitExecStart reads a systemd unit and returns it with its ExecStart
// split into words.
func unitExecStart(t *testing.T, path string) ([]byte, []string) {
	t.Helper()
	unit, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var exec []string
	for _, line := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = strings.Fields(rest)
		}
	}
	return unit, exec
}
