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

// Part is one part of a multimodal message: text, or an image given by URL
// (usually a data: URL).
type Part struct {
	Type     string // "text" or "image_url"
	Text     string
	ImageURL string
}

type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
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
		if p.Type == "image_url" {
			parts[i].ImageURL = &struct {
				URL string `json:"url"`
			}{p.ImageURL}
		}
	}
	return json.Marshal(struct {
		Role    string     `json:"role"`
		Content []wirePart `json:"content"`
	}{m.Role, parts})
}

// UnmarshalJSON reads a chat message whose content is a string or a list
// of text and image_url parts.
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
		default:
			return fmt.Errorf("content part type %q: want text or image_url", p.Type)
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
