package module

import (
	"slices"
	"testing"
)

func TestDetect(t *testing.T) {
	m := mustParse(t, quarterModule)
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"english word", "I sometimes panic at work", []string{"panic"}},
		{"spanish word", "Siento ira cuando pienso en eso", []string{"anger"}},
		{"case-insensitive", "PANIC and ANGER", []string{"panic", "anger"}},
		{"accent in the text", "tengo pánico", []string{"panic"}},
		{"accent missing in the text", "tengo panico", []string{"panic"}},
		{"accent added in the text", "la írá", []string{"anger"}},
		{"decomposed accent", "tengo pa\u0301nico", []string{"panic"}},
		{"punctuation is a boundary", "panic! (anger?)", []string{"panic", "anger"}},
		{"no hit inside a longer word: ira in mira", "mira, no sé", nil},
		{"no hit inside a longer word: ira in tiranía", "la tiranía", nil},
		{"no hit inside a longer word: panic in panicky", "I felt panicky", nil},
		{"no hit at a word's end", "hyperpanic", nil},
		{"multi-word keyword", "the fight or flight response", []string{"fight_or_flight"}},
		{"multi-word keyword with hyphens", "my fight-or-flight kicks in", []string{"fight_or_flight"}},
		{"multi-word keyword, spanish, accents", "la respuesta de LUCHA O HUÍDA", []string{"fight_or_flight"}},
		{"multi-word keyword needs every word in order", "fight and flight, or flight fight", nil},
		{"multi-word keyword across a line break", "fight or\nflight", []string{"fight_or_flight"}},
		{"prefix keyword", "avoidance and avoiding", []string{"avoidance"}},
		{"prefix keyword, exact word", "I avoid it", []string{"avoidance"}},
		{"prefix keyword, spanish", "evito salir", []string{"avoidance"}},
		{"prefix keyword does not match inside a word", "unavoidable", nil},
		{"module order, each topic once", "avoid panic, panic, anger", []string{"panic", "anger", "avoidance"}},
		{"empty text", "", nil},
		{"only punctuation", "?!… —", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Detect(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Detect(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestDetectShippedModule(t *testing.T) {
	m := Builtin()[0]
	tests := []struct {
		text string
		want []string
	}{
		{"Tell me about the fight or flight response", []string{"fight_flight_response"}},
		{"¿Qué es la respuesta de lucha o huida?", []string{"fight_flight_response"}},
		{"I always avoid parties and I catastrophize", []string{"avoidance", "cognitive_distortions"}},
		{"Me pongo muy nerviosa y evito salir", []string{"avoidance"}},
		// "simpático" alone means "nice" in Spanish, so it is not a keyword; the system is.
		{"Mi médico es muy simpático", nil},
		{"el sistema nervioso simpático", []string{"sympathetic_nervous_system"}},
		// A symptom is not the coping technique: "shortness of breath" is the physical level only.
		{"I get shortness of breath", []string{"physical_level"}},
		{"Estoy muy estresada últimamente", []string{"stress"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got := m.Detect(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Detect(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	m := mustParse(t, quarterModule)
	tests := []struct {
		ref    string
		want   string
		wantOK bool
	}{
		{"panic", "panic", true},
		{"Panic", "panic", true},
		{"Pánico", "panic", true},
		{"fight_or_flight", "fight_or_flight", true},
		{"Fight-Flight Response", "fight_or_flight", true},
		{"fight flight response", "fight_or_flight", true},
		{"lucha o huída", "fight_or_flight", true},
		{"Evitacion", "avoidance", true},
		{"...12 topics...", "", false},
		{"panic attacks", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, ok := m.Resolve(tt.ref)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Resolve(%q) = %q, %v; want %q, %v", tt.ref, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Fight-or-Flight", []string{"fight", "or", "flight"}},
		{"ÁÉÍÓÚ ÜÑ ç", []string{"aeiou", "un", "c"}},
		{"self_critical 5-4-3", []string{"self", "critical", "5", "4", "3"}},
		{"what's", []string{"what", "s"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := words(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
