package workload

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Message is one chat message. Its content is text (Content) or, for a
// multimodal message, a list of parts (Parts), sent as OpenAI's content
// array.
type Message struct {
	Role    string
	Content string
	Parts   []Part
}

// Part is one part of a multimodal message: text, an image given by URL
// (usually a data: URL), or an audio clip (base64 data and its format).
type Part struct {
	Type        string // "text", "image_url" or "input_audio"
	Text        string
	ImageURL    string
	AudioData   string // base64, no data: prefix (input_audio)
	AudioFormat string // "wav" or "mp3" (input_audio)
}

type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
	InputAudio *wireAudio `json:"input_audio,omitempty"`
}

// wireAudio is the chat API's input_audio object.
type wireAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// MarshalJSON writes the message as the chat API wants it.
func (m Message) MarshalJSON() ([]byte, error) {
	if len(m.Parts) == 0 {
		return json.Marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{m.Role, m.Content})
	}
	parts := make([]wirePart, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = wirePart{Type: p.Type, Text: p.Text}
		switch p.Type {
		case "image_url":
			parts[i].ImageURL = &struct {
				URL string `json:"url"`
			}{p.ImageURL}
		case "input_audio":
			parts[i].InputAudio = &wireAudio{Data: p.AudioData, Format: p.AudioFormat}
		}
	}
	return json.Marshal(struct {
		Role    string     `json:"role"`
		Content []wirePart `json:"content"`
	}{m.Role, parts})
}

// UnmarshalJSON reads a chat message whose content is a string or a list
// of text, image_url and input_audio parts.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role}
	if len(w.Content) == 0 || string(w.Content) == "null" {
		return nil
	}
	if w.Content[0] == '"' {
		return json.Unmarshal(w.Content, &m.Content)
	}
	var parts []wirePart
	if err := json.Unmarshal(w.Content, &parts); err != nil {
		return errors.New("message content must be a string or a list of parts")
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			m.Parts = append(m.Parts, Part{Type: "text", Text: p.Text})
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return errors.New(`an image_url part needs "image_url": {"url": ...}`)
			}
			m.Parts = append(m.Parts, Part{Type: "image_url", ImageURL: p.ImageURL.URL})
		case "input_audio":
			if p.InputAudio == nil || p.InputAudio.Data == "" {
				return errors.New(`an input_audio part needs "input_audio": {"data": ..., "format": "wav"}`)
			}
			m.Parts = append(m.Parts, Part{Type: "input_audio", AudioData: p.InputAudio.Data, AudioFormat: p.InputAudio.Format})
		default:
			return fmt.Errorf("content part type %q: want text, image_url or input_audio", p.Type)
		}
	}
	return nil
}

// Text is the message's text: Content, or its text parts joined.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.Parts {
		if p.Type == "text" {
			if s != "" {
				s += "\n"
			}
			s += p.Text
		}
	}
	return s
}
