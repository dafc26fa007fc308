package lludp

import (
	"slices"
	"testing"
)

func TestChannelOf(t *testing.T) {
	tm := Builtin()
	for _, tc := range []struct {
		msg string
		ch  Channel
	}{
		{"LayerData", ChannelLayer}, {"ParcelOverlay", ChannelLayer}, {"ImagePacket", ChannelTexture}, {"TransferPacket", ChannelAsset},
		{"ObjectUpdate", ChannelTask}, {"SimStats", ChannelTask}, {"ImprovedTerseObjectUpdate", ChannelAvatar},
		{"CoarseLocationUpdate", ChannelAvatar}, {"AvatarAppearance", ChannelAvatar}, {"PacketAck", NoChannel},
		{"StartPingCheck", NoChannel}, {"ChatFromSimulator", NoChannel},
	} {
		m := tm.ByName(tc.msg)
		if m == nil {
			t.Fatalf("template lacks %s", tc.msg)
		}
		if got := ChannelOf(m); got != tc.ch {
			t.Errorf("%s (%v): channel %v, want %v", tc.msg, m.Category(), got, tc.ch)
		}
	}
}

// TestChannelOfWholeTemplate holds every message's channel to its category,
// and the avatar switch to its list.
func TestChannelOfWholeTemplate(t *testing.T) {
	tm := Builtin()
	for _, name := range avatarStateMessages {
		if m := tm.ByName(name); m == nil || m.Category() != Task {
			t.Errorf("avatar-state message %s is not a Task message of the template", name)
		}
	}
	for i := range tm.Messages {
		m := &tm.Messages[i]
		avatar := slices.Contains(avatarStateMessages[:], m.Name)
		if isAvatarState(m.Name) != avatar {
			t.Errorf("%s: isAvatarState %v, the list says %v", m.Name, !avatar, avatar)
		}
		want := ChannelOfCategory(m.Category())
		if avatar {
			want = ChannelAvatar
		}
		if got := ChannelOf(m); got != want {
			t.Errorf("%s (%v): channel %v, want %v", m.Name, m.Category(), got, want)
		}
	}
}

func TestChannelOfCategory(t *testing.T) {
	for _, tc := range []struct {
		cat Category
		ch  Channel
	}{
		{Resend, NoChannel}, {Land, ChannelLayer}, {Wind, ChannelLayer}, {Cloud, ChannelLayer},
		{Task, ChannelTask}, {Texture, ChannelTexture}, {Asset, ChannelAsset},
		{Unthrottled, NoChannel}, {NumCategories, NoChannel},
	} {
		if got := ChannelOfCategory(tc.cat); got != tc.ch {
			t.Errorf("%v: %v, want %v", tc.cat, got, tc.ch)
		}
	}
}

func TestChannelString(t *testing.T) {
	for _, tc := range []struct {
		ch   Channel
		want string
	}{
		{ChannelAvatar, "Avatar"}, {ChannelTask, "Task"}, {ChannelTexture, "Texture"}, {ChannelLayer, "Layer"}, {ChannelAsset, "Asset"},
		{NoChannel, "None"}, {NumChannels, "Channel(5)"},
	} {
		if got := tc.ch.String(); got != tc.want {
			t.Errorf("Channel %d: %q, want %q", uint8(tc.ch), got, tc.want)
		}
	}
}

func BenchmarkChannelOf(b *testing.B) {
	tm := Builtin()
	var msgs []*Message
	for _, name := range []string{"ObjectUpdate", "ImprovedTerseObjectUpdate", "ImagePacket", "PacketAck", "LayerData", "ObjectUpdateCompressed"} {
		msgs = append(msgs, tm.ByName(name))
	}
	var sink Channel
	for i := 0; b.Loop(); i++ {
		sink += ChannelOf(msgs[i%len(msgs)])
	}
	_ = sink
}
