package sim

import "strings"

// wordList holds the vocabulary of generated text: common English words each
// of which, with its leading space, is exactly one cl100k_base token, and
// which the cl100k pre-tokeniser never merges with a neighbour (letters
// only). TestWordsAreOneCl100kToken checks both properties. It is a constant
// so that the package holds no mutable tables; newVocab splits it.
const wordList = `the of and to in is that for it on with as was at by be this are from or
have an they which one you were her all she there would their we him been has when who will more
no if out so said what up its about into than them can only other new some could time these two
may then do first any my now such like our over man me even most made after also did many before
must through back years where much your way well down should because each just those people how too
little state good very make world still own see men work long get here between both life being
under never day same another know while last might us great old year off come since against go came
right used take three states himself few house use during without again place around however home
small found thought went say part once general high upon school every does got united left number
course war until always away something fact though water less public put think almost hand enough
far took head yet government system better set told nothing night end why called eyes find going
look asked later knew point next program city business give group toward young days let room
president side social given present several order national possible rather second face per among
form important often things looked early white case become large big need four within felt along
children saw best church ever least power development light thing seemed family interest want
members mind country area others done turned although open service certain kind problem began
different door thus help sense means whole matter perhaps itself times law human line above name
example action company hands local show whether five history gave today either act feet across taken
past quite anything seen having death week experience body word half really field am car words
already themselves information tell together college shall money period held keep sure free seems
political real behind cannot miss question air office making brought whose special heard major
problems ago became federal`

// vocab is the generated-text vocabulary: each word with its leading space.
type vocab struct {
	words [][]byte
}

func newVocab() *vocab {
	f := strings.Fields(wordList)
	v := &vocab{words: make([][]byte, len(f))}
	for i, w := range f {
		v.words[i] = []byte(" " + w)
	}
	return v
}

// word returns token k of the response with the given text seed.
func (v *vocab) word(textSeed uint64, k int) []byte {
	return v.words[mix64(textSeed+uint64(k))%uint64(len(v.words))]
}

// appendText appends the first n words of a response to b.
func (v *vocab) appendText(b []byte, textSeed uint64, n int) []byte {
	for k := range n {
		b = append(b, v.word(textSeed, k)...)
	}
	return b
}
